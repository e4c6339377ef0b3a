// Env::write: what a body's typed result does to its transaction, and that
// growth on MDB_MAP_FULL is bounded; under an Index, the map's growth, a
// full disk and stale reader slots.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <lmdb.h>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <string>

#include "index/env.hpp"
#include "index/index.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/unit/index/support.hpp"

namespace dedupd::index::lmdb {
namespace {

class EnvWrite : public ::testing::Test {
 protected:
  void SetUp() override {
    EnvOptions o;
    o.dir = (tmp / "env");
    o.map_size = 1 << 20;
    o.max_map_size = 1ull << 30;
    o.max_readers = 8;
    o.max_dbs = 4;
    auto e = Env::open(o);
    ASSERT_TRUE(e) << e.error().to_string();
    env = std::move(*e);
    ASSERT_TRUE(env->write([&](MDB_txn* txn) -> TxnResult { return mdb_dbi_open(txn, "t", MDB_CREATE, &dbi); },
                           "creating a table"));
  }

  TxnResult put(MDB_txn* txn, const std::string& key) {
    MDB_val k{key.size(), const_cast<char*>(key.data())}, v{key.size(), const_cast<char*>(key.data())};
    return mdb_put(txn, dbi, &k, &v, 0);
  }
  // One write of `n` values of 4,000 bytes (an overflow page each), keys
  // k0.., counting how often its body ran.
  Status write_pages(int n, int& runs, const char* what) {
    const std::string big(4000, 'x');
    return env->write(
        [&](MDB_txn* txn) -> TxnResult {
          ++runs;
          for (int i = 0; i < n; ++i) {
            std::string key = "k" + std::to_string(i);
            MDB_val k{key.size(), key.data()}, v{big.size(), const_cast<char*>(big.data())};
            if (int rc = mdb_put(txn, dbi, &k, &v, 0)) return rc;
          }
          return TxnResult::commit();
        },
        what);
  }
  bool has(const std::string& key) {
    auto r = env->begin_read();
    EXPECT_TRUE(r);
    MDB_val k{key.size(), const_cast<char*>(key.data())}, v;
    return mdb_get(r->get(), dbi, &k, &v) == 0;
  }

  dedupd::tests::TempDir tmp{"index-env"};
  std::unique_ptr<Env> env;
  MDB_dbi dbi = 0;
};

TEST_F(EnvWrite, CommitKeepsWhatTheBodyWrote) {
  ASSERT_TRUE(env->write([&](MDB_txn* txn) { return put(txn, "a"); }, "a put"));
  EXPECT_TRUE(has("a"));
}

TEST_F(EnvWrite, RollbackIsNotAnErrorAndKeepsNothing) {
  auto s = env->write(
      [&](MDB_txn* txn) -> TxnResult {
        if (auto r = put(txn, "b"); !r.proceed()) return r;
        return TxnResult::rollback();
      },
      "a put rolled back");
  EXPECT_TRUE(s);
  EXPECT_FALSE(has("b"));
}

TEST_F(EnvWrite, TheBodysOwnErrorComesBackAndKeepsNothing) {
  auto s = env->write(
      [&](MDB_txn* txn) -> TxnResult {
        if (auto r = put(txn, "c"); !r.proceed()) return r;
        return make_error(kRuleCorrupt, "a record does not decode");
      },
      "a put that fails");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().rule, kRuleCorrupt);
  EXPECT_EQ(s.error().to_string(), "index.corrupt: a record does not decode");  // no meaningless "at offset 0"
  EXPECT_FALSE(has("c"));
}

TEST_F(EnvWrite, AnLmdbCodeIsAnErrorNamingWhatFailed) {
  auto s = env->write([&](MDB_txn*) -> TxnResult { return MDB_BAD_VALSIZE; }, "a bad put");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().rule, kRuleLmdb);
  EXPECT_NE(s.error().message.find("a bad put"), std::string::npos) << s.error().message;
}

TEST_F(EnvWrite, MapFullGrowsTheMapAndRunsTheBodyAgain) {
  // 4 MiB of values do not fit the 1 MiB map: the body runs again after
  // each growth and commits once they fit.
  int runs = 0;
  auto s = write_pages(1000, runs, "a large write");
  ASSERT_TRUE(s) << s.error().to_string();
  EXPECT_GT(runs, 1);
  EXPECT_GE(env->map_size(), 4u << 20);
  EXPECT_TRUE(has("k999"));
}

// A write a little larger than one step grows the map twice by that step,
// not by one step and then two: the file is the map, and what it holds
// ahead of the pages used stays for good. 600 values of 4,000 bytes (one
// overflow page each, ~2.4 MiB) do not fit 2 MiB and fit 3.
TEST_F(EnvWrite, ASecondGrowthInOneWriteDoesNotDoubleTheStep) {
  int runs = 0;
  auto s = write_pages(600, runs, "a write of two steps and a bit");
  ASSERT_TRUE(s) << s.error().to_string();
  EXPECT_EQ(runs, 3);
  EXPECT_EQ(env->map_size(), 3u << 20) << "1 MiB, then a 1 MiB step twice";
}

TEST_F(EnvWrite, ABodyThatNeverFitsEndsAsMapFull) {
  int runs = 0;
  auto s = env->write(
      [&](MDB_txn*) -> TxnResult {
        ++runs;
        return MDB_MAP_FULL;
      },
      "a write that never fits");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().rule, kRuleMapFull);
  EXPECT_LE(runs, int(Env::kMaxGrowths) + 1);
}

}  // namespace
}  // namespace dedupd::index::lmdb

// The map grows, and a full disk or a map at its limit is an error that
// leaves the index whole, under an Index; stale reader slots are cleared.
namespace dedupd::index::gen {
namespace {

using ::testing::_;
using ::testing::AtLeast;
using ::testing::IsEmpty;

class MockObserver : public Observer {
 public:
  MOCK_METHOD(void, map_grown, (std::uint64_t old_size, std::uint64_t new_size), (override));
  MOCK_METHOD(void, stale_readers_cleared, (int count), (override));
  MOCK_METHOD(void, merge_failed, (const base::Error& error), (override));
};

TEST(IndexGrowth, MapGrowsFromATinyMap) {
  TempDir tmp;
  MockObserver obs;
  std::uint64_t last = 0;
  EXPECT_CALL(obs, map_grown(_, _)).Times(AtLeast(3)).WillRepeatedly([&](std::uint64_t o, std::uint64_t n) {
    EXPECT_GT(n, o);
    EXPECT_GE(o, last);
    last = n;
  });
  EXPECT_CALL(obs, stale_readers_cleared(_)).Times(0);
  auto idx = Index::open(Options{.dir = tmp.path(), .map_size = 64 * 1024, .observer = &obs});
  ASSERT_TRUE(idx) << idx.error().to_string();
  std::vector<GenXorb> xs;
  for (int i = 0; i < 20; ++i) xs.push_back(gen_xorb(100 + std::uint64_t(i), 2000));
  for (int i = 0; i < 20; ++i) {
    auto s = own(build_shard({.xorbs = {&xs[std::size_t(i)]}}));
    auto r = (*idx)->ingest(*s.view, {});
    ASSERT_TRUE(r) << r.error().to_string();
    ASSERT_EQ(r->outcome, IngestOutcome::added);
  }
  for (const auto& x : xs) EXPECT_EQ((*idx)->lookup(x.raw[1999])->size(), 1u);
  auto st = (*idx)->stats();
  EXPECT_GT(st->map_size, 64u * 1024);
  EXPECT_EQ(st->map_size, last);
  EXPECT_THAT(*(*idx)->check_invariants(), IsEmpty());
}

TEST(IndexGrowth, MaxMapSizeIsAnErrorAndTheIndexStaysConsistent) {
  TempDir tmp;
  auto idx = Index::open(Options{.dir = tmp.path(), .map_size = 256 * 1024, .max_map_size = 512 * 1024});
  ASSERT_TRUE(idx);
  std::vector<GenXorb> xs;
  std::vector<Hash> added;
  std::optional<Error> failure;
  for (int i = 0; i < 50 && !failure; ++i) {
    xs.push_back(gen_xorb(200 + std::uint64_t(i), 500));
    auto s = own(build_shard({.xorbs = {&xs.back()}}));
    auto r = (*idx)->ingest(*s.view, {});
    if (r) added.push_back(s.hash);
    else failure = r.error();
  }
  ASSERT_TRUE(failure) << "500 x 50 chunks cannot fit in 512 KiB";
  EXPECT_EQ(failure->rule, kRuleMapFull);
  EXPECT_THAT((*idx)->check_invariants().value(), IsEmpty());
  EXPECT_EQ((*idx)->stats()->shards_live, added.size());
  for (std::size_t i = 0; i < added.size(); ++i) EXPECT_EQ((*idx)->lookup(xs[i].raw[7])->size(), 1u);
  EXPECT_THAT(*(*idx)->lookup(xs.back().raw[7]), IsEmpty());
}

// Disk full, simulated by the file size limit in a child process: LMDB sees
// a short write (EIO) or EFBIG. The failed ingest is an error value, and the
// index on disk holds whole shards only.
TEST(IndexGrowth, DiskFullIsAnErrorAndLeavesWholeShards) {
  TempDir tmp;
  const int kShards = 40;
  std::vector<GenXorb> xs;
  for (int i = 0; i < kShards; ++i) xs.push_back(gen_xorb(300 + std::uint64_t(i), 300));
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim {
      256 * 1024, 256 * 1024
    };
    setrlimit(RLIMIT_FSIZE, &lim);
    // The map is a file of its size (MDB_WRITEMAP): start below the limit.
    auto idx = Index::open(Options{.dir = tmp.path(), .map_size = 64 << 10});
    if (!idx) _exit(2);
    for (int i = 0; i < kShards; ++i) {
      auto s = own(build_shard({.xorbs = {&xs[std::size_t(i)]}}));
      auto r = (*idx)->ingest(*s.view, {});
      if (!r) {
        fprintf(stderr, "child: %s\n", r.error().to_string().c_str());
        _exit(r.error().rule == kRuleNoSpace || r.error().rule == kRuleIo ? 0 : 3);
      }
    }
    _exit(4);  // never ran out of space
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0) << "the child should hit the size limit and get index.no_space or index.io";
  auto idx = Index::open(Options{.dir = tmp.path()});
  ASSERT_TRUE(idx) << idx.error().to_string();
  EXPECT_THAT((*idx)->check_invariants().value(), IsEmpty());
  std::uint64_t live = (*idx)->stats()->shards_live;
  EXPECT_GT(live, 0u);
  EXPECT_LT(live, std::uint64_t(kShards));
  for (const auto& x : xs) {
    std::size_t answered = 0;
    for (const auto& h : x.raw) answered += (*idx)->lookup(h)->size();
    EXPECT_TRUE(answered == 0 || answered == x.raw.size()) << answered;
  }
}

// LMDB writes into the mapped data.mdb (MDB_WRITEMAP), so a map page
// without a disk block would be SIGBUS on first write. The map is reserved
// on disk before any write may touch it: on a full disk (here the file size
// limit) growth takes what is left in smaller steps, then fails cleanly, and
// the process goes on reading what it committed.
TEST(IndexGrowth, AFullDiskUnderTheWriteMapIsNoSpaceNotSigbus) {
  TempDir tmp;
  constexpr std::uint64_t kLimit = 1 << 20;
  std::vector<GenXorb> xs;
  for (int i = 0; i < 60; ++i) xs.push_back(gen_xorb(400 + std::uint64_t(i), 600));
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim {
      kLimit, kLimit
    };
    setrlimit(RLIMIT_FSIZE, &lim);
    auto idx = Index::open(Options{.dir = tmp.path(), .map_size = 64 << 10});
    if (!idx) _exit(2);
    for (std::size_t i = 0; i < xs.size(); ++i) {
      auto s = own(build_shard({.xorbs = {&xs[i]}}));
      auto r = (*idx)->ingest(*s.view, {});
      if (r) continue;
      if (r.error().rule != kRuleNoSpace) _exit(3);
      if (i == 0) _exit(4);
      // Growth went on in smaller steps up to the limit.
      if ((*idx)->stats()->map_size + (128 << 10) < kLimit) _exit(5);
      // Still reading what was committed, in the same process.
      if ((*idx)->lookup(xs[0].raw[5])->size() != 1) _exit(6);
      if (!(*idx)->lookup(xs[i].raw[5])->empty()) _exit(7);
      _exit(0);
    }
    _exit(8);  // never ran out of space
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  ASSERT_EQ(WEXITSTATUS(status), 0);
  // Every byte of data.mdb has its blocks: no page of the map is a hole.
  struct stat st {};
  ASSERT_EQ(::stat((tmp.path() + "/data.mdb").c_str(), &st), 0);
  EXPECT_GE(std::uint64_t(st.st_blocks) * 512, std::uint64_t(st.st_size));
  auto idx = Index::open(Options{.dir = tmp.path()});
  ASSERT_TRUE(idx) << idx.error().to_string();
  EXPECT_THAT((*idx)->check_invariants().value(), IsEmpty());
}

TEST(IndexGrowth, StaleReaderSlotsOfDeadProcessesAreCleared) {
  TempDir tmp;
  { ASSERT_TRUE(Index::open(Options{.dir = tmp.path()})); }
  auto open_raw = [&](MDB_env*& env) {
    mdb_env_create(&env);
    mdb_env_set_maxdbs(env, 32);
    mdb_env_set_maxreaders(env, 256);
    return mdb_env_open(env, tmp.path().c_str(), MDB_NOTLS, 0640);
  };
  // A process that keeps the environment open, so the next opener does not
  // get the lock file to itself (the first opener resets the reader table).
  int hold[2], ready[2];
  ASSERT_EQ(pipe(hold), 0);
  ASSERT_EQ(pipe(ready), 0);
  pid_t holder = fork();
  ASSERT_GE(holder, 0);
  if (holder == 0) {
    close(hold[1]);
    MDB_env* env;
    if (open_raw(env)) _exit(2);
    char c = 1;
    if (write(ready[1], &c, 1) != 1) _exit(3);
    if (read(hold[0], &c, 1) < 0) _exit(4);
    _exit(0);
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  pid_t reader = fork();
  ASSERT_GE(reader, 0);
  if (reader == 0) {
    // A reader that dies holding its slot (no cleanup runs after _exit).
    MDB_env* env;
    if (open_raw(env)) _exit(2);
    MDB_txn* txn;
    if (mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn)) _exit(3);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(reader, &status, 0), reader);
  ASSERT_EQ(WEXITSTATUS(status), 0);
  {
    MockObserver obs;
    EXPECT_CALL(obs, stale_readers_cleared(1));
    auto idx = Index::open(Options{.dir = tmp.path(), .observer = &obs});
    ASSERT_TRUE(idx);
  }
  close(hold[1]);
  ASSERT_EQ(waitpid(holder, &status, 0), holder);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace dedupd::index::gen
