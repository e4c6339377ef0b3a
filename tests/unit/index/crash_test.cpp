// kill -9 at random moments: a child process ingests (and removes) shards in
// a loop and is killed with SIGKILL over and over. After each kill the index
// must open, hold every shard whole or not at all, keep every acknowledged
// write, and pass the invariant checker.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "index/index.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/unit/index/crash_common.hpp"

extern char** environ;

namespace dedupd::index::gen {

using tests::TempDir;
namespace {

struct Round {
  std::vector<std::pair<char, std::uint64_t>> acks;
  bool killed = false;
  std::string exit_note;
};

// Where a round's kill lands, paced by the child's progress rather than the
// clock (a sanitized child on a busy machine may take a second to open the
// index): after its first acknowledgement and `more_acks` further ones, at
// `fraction` of the mean time between those acknowledgements, so mostly
// inside the next write.
struct KillPoint {
  int more_acks = 1;
  double fraction = 0.5;  // in [0, 1)
};

// Reads acknowledgement lines ("A 12\n") from the child as they come.
class AckStream {
 public:
  explicit AckStream(int fd) : fd_(fd) {}
  // Blocks until `lines` lines in all have come; false at end of stream (the
  // child exited or was killed).
  bool wait_for(std::size_t lines) {
    char buf[4096];
    while (lines_ < lines) {
      ssize_t n = read(fd_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      text_.append(buf, std::size_t(n));
      lines_ += std::size_t(std::count(buf, buf + n, '\n'));
    }
    return true;
  }
  // Everything left, once the child is gone.
  const std::string& rest() {
    while (wait_for(lines_ + 1)) {
    }
    return text_;
  }

 private:
  int fd_;
  std::string text_;
  std::size_t lines_ = 0;
};

Round run_child(const std::string& dir, std::uint64_t start, KillPoint at) {
  int out[2];
  EXPECT_EQ(pipe(out), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  std::string start_s = std::to_string(start);
  char* argv[] = {const_cast<char*>(DEDUPD_CRASH_CHILD), const_cast<char*>(dir.c_str()), start_s.data(), nullptr};
  pid_t pid;
  int rc = posix_spawn(&pid, DEDUPD_CRASH_CHILD, &fa, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  Round r;
  if (rc != 0) {
    r.exit_note = "posix_spawn failed";
    close(out[0]);
    return r;
  }
  AckStream acks(out[0]);
  if (acks.wait_for(1)) {
    const auto first = std::chrono::steady_clock::now();
    if (acks.wait_for(1 + std::size_t(at.more_acks))) {
      const auto per_ack = (std::chrono::steady_clock::now() - first) / at.more_acks;
      std::this_thread::sleep_for(std::chrono::duration_cast<std::chrono::nanoseconds>(per_ack * at.fraction));
    }
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  r.killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  if (!r.killed) r.exit_note = "child exited by itself with status " + std::to_string(WEXITSTATUS(status));
  std::istringstream in(acks.rest());
  close(out[0]);
  char what;
  std::uint64_t i;
  while (in >> what >> i) r.acks.push_back({what, i});
  return r;
}

// True when every chunk of shard i answers with shard i among its shards;
// false when none does; a mix is a half shard and fails the test.
std::optional<bool> whole_or_absent(const Index& idx, std::uint64_t i, const CrashShard& c) {
  std::vector<Hash> q(c.own.raw);
  q.insert(q.end(), c.shared.raw.begin(), c.shared.raw.end());
  BatchResult out;
  EXPECT_TRUE(idx.lookup_batch(q, out));
  std::size_t listed = 0;
  for (std::size_t k = 0; k < q.size(); ++k) {
    bool here = false;
    for (const auto& l : out.of(k))
      for (const auto& s : out.shards(l)) here |= s.shard == c.shard.hash;
    listed += here;
  }
  if (listed == 0) return false;
  if (listed == q.size()) return true;
  ADD_FAILURE() << "shard " << i << " is half present: " << listed << " of " << q.size() << " chunks";
  return std::nullopt;
}

TEST(IndexCrash, KillNineAtRandomMomentsLeavesWholeShards) {
  TempDir tmp;
  const std::string dir = tmp / "idx";
  const unsigned seed = unsigned(std::random_device{}());
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> more_acks(1, 6);
  std::uniform_real_distribution<double> fraction(0.0, 1.0);

  std::map<std::uint64_t, bool> acked;  // i -> live after its last acknowledged write
  std::uint64_t next = 0, total_acks = 0;
  int kills = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(50);
  for (int round = 0; round < 150 && (kills < 100 || round < 110); ++round) {
    if (std::chrono::steady_clock::now() > deadline && kills >= 100) break;
    Round r = run_child(dir, next, KillPoint{more_acks(rng), fraction(rng)});
    ASSERT_TRUE(r.killed) << r.exit_note;
    ++kills;
    std::uint64_t hi = next;  // the last shard the child may have touched
    std::optional<std::uint64_t> last_ingest;
    for (auto [what, i] : r.acks) {
      acked[i] = what == 'A';
      if (what == 'A') hi = std::max(hi, i + 1), last_ingest = i;
      ++total_acks;
    }
    // The write after the last acknowledgement may or may not have been
    // committed when the kill came: its shard can be in either state.
    if (last_ingest && crash_removes_after(*last_ingest) && (r.acks.empty() || r.acks.back().first == 'A'))
      acked.erase(*last_ingest - 2);
    std::set<std::uint64_t> touched;
    for (std::uint64_t i = next; i <= hi; ++i) {
      touched.insert(i);
      if (i >= 2) touched.insert(i - 2);  // a removal may have been under way
    }
    next = hi + 1;

    auto opened = Index::open(Options{.dir = dir});
    ASSERT_TRUE(opened) << "round " << round << ": " << opened.error().to_string();
    Index& idx = **opened;
    auto problems = idx.check_invariants();
    ASSERT_TRUE(problems);
    ASSERT_THAT(*problems, ::testing::IsEmpty()) << "round " << round;
    // Every round checks what this child touched; every tenth, everything.
    std::set<std::uint64_t> check = touched;
    if (round % 10 == 9)
      for (std::uint64_t i = 0; i < next; ++i) check.insert(i);
    for (std::uint64_t i : check) {
      CrashShard c = crash_shard(i);
      auto state = whole_or_absent(idx, i, c);
      ASSERT_TRUE(state) << "round " << round;
      auto info = idx.shard(c.shard.hash);
      ASSERT_TRUE(info);
      bool live = info->has_value() && (*info)->state == ShardState::live;
      EXPECT_EQ(*state, live) << "shard " << i << ": lookups and record disagree";
      if (auto a = acked.find(i); a != acked.end()) {
        EXPECT_EQ(live, a->second) << "shard " << i << ": an acknowledged " << (a->second ? "ingest" : "removal")
                                   << " was lost";
      }
    }
  }
  EXPECT_GE(kills, 100);
  EXPECT_GT(total_acks, 100u) << "the child should get real work done between kills";
  std::printf("crash test: %d kills, %llu acknowledged writes, %llu shards\n", kills,
              static_cast<unsigned long long>(total_acks), static_cast<unsigned long long>(next));
}

}  // namespace
}  // namespace dedupd::index::gen
