// Building the chunk filter from the chunk tables and putting it in service
// (index/chunk_filter_build): answers through it, its growth and memory
// bound, an index that stops trusting it when another process writes, and a
// build that reads beside writers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <future>

#include "index/chunk_filter.hpp"
#include "index/index.hpp"
#include "index/tuning.hpp"
#include "tests/unit/index/crash_common.hpp"
#include "tests/unit/index/support.hpp"

namespace dedupd::index::gen {
namespace {

class ChunkFilterIndex : public IndexFixture {};

TEST_F(ChunkFilterIndex, MissesAndHitsThroughTheFilter) {
  ASSERT_TRUE(idx->build_chunk_filter());
  EXPECT_TRUE(idx->chunk_filter_info().in_service);
  EXPECT_FALSE(idx->chunk_filter_due());
  GenXorb x = gen_xorb(1, 300), y = gen_xorb(2, 200);
  ShardSpec raw{.xorbs = {&x}};
  ShardSpec keyed{.xorbs = {&y}, .key = hash_of_seed(77)};
  ingest(own(build_shard(raw)));
  ingest(own(build_shard(keyed)));
  for (const Hash& h : x.raw) ASSERT_EQ(find(h).size(), 1u);
  for (const Hash& h : y.raw) ASSERT_EQ(find(h).size(), 1u);
  for (std::uint64_t i = 0; i < 1000; ++i) EXPECT_TRUE(find(hash_of_seed(1u << 30 | i)).empty());
  EXPECT_EQ(idx->chunk_filter_info().added, 500u);
}

// The filter is sized from the index when built and built again, larger,
// once the index outgrows it: a filter that stopped growing would stay
// full here and the index would not ask for a rebuild.
TEST_F(ChunkFilterIndex, GrowsWithTheIndex) {
  Options o;
  o.filter_floor_entries = 1000;
  reopen(o);
  GenXorb x = gen_xorb(51, 4000), y = gen_xorb(52, 30'000);
  ShardSpec keyed{.xorbs = {&y}, .key = hash_of_seed(78)};
  ingest(own(build_shard(ShardSpec{.xorbs = {&x}})));
  auto small = idx->build_chunk_filter();
  ASSERT_TRUE(small) << small.error().to_string();
  EXPECT_EQ(small->capacity, 5000u) << "the entries and a quarter more";
  EXPECT_FALSE(small->at_bound);
  ingest(own(build_shard(keyed)));
  EXPECT_TRUE(idx->chunk_filter_due()) << "34,000 entries in a filter for 5,000";
  auto grown = idx->build_chunk_filter();
  ASSERT_TRUE(grown) << grown.error().to_string();
  EXPECT_EQ(grown->added, 34'000u);
  EXPECT_GE(grown->capacity, 34'000u * 5 / 4);
  EXPECT_GE(grown->bytes, grown->capacity * ChunkFilter::kBitsPerEntry / 8);
  EXPECT_GT(grown->bytes, small->bytes * 5);
  EXPECT_FALSE(idx->chunk_filter_due());
  EXPECT_LT(idx->chunk_filter_info().false_positive_rate, 0.02);
  for (const GenXorb* g : {&x, &y})
    for (const Hash& h : g->raw) ASSERT_EQ(find(h).size(), 1u);
}

// index.filter_memory bounds what the filters take however large the
// index; past it they saturate, are not rebuilt over and over, and the
// answers are those of a filter with room to spare.
TEST_F(ChunkFilterIndex, TheMemoryBoundHoldsAndTheAnswersStayTheSame) {
  GenXorb x = gen_xorb(61, 20'000), y = gen_xorb(62, 20'000);
  ingest(own(build_shard(ShardSpec{.xorbs = {&x}})));
  ingest(own(build_shard(ShardSpec{.xorbs = {&y}, .key = hash_of_seed(79)})));
  std::vector<Hash> asked;
  for (const GenXorb* g : {&x, &y}) asked.insert(asked.end(), g->raw.begin(), g->raw.end());
  for (std::uint64_t i = 0; i < 20'000; ++i) asked.push_back(hash_of_seed(std::uint64_t(7) << 40 | i));
  auto answers = [&] {
    std::vector<std::size_t> out;
    for (const Hash& h : asked) out.push_back(find(h).size());
    return out;
  };

  Options roomy;
  roomy.filter_floor_entries = 1000;
  reopen(roomy);
  auto big = idx->build_chunk_filter();
  ASSERT_TRUE(big) << big.error().to_string();
  EXPECT_FALSE(big->at_bound);
  const std::vector<std::size_t> expected = answers();
  EXPECT_EQ(std::count(expected.begin(), expected.end(), 1u), 40'000);

  Options tight = roomy;
  tight.filter_memory = 4096;
  reopen(tight);
  auto bounded = idx->build_chunk_filter();
  ASSERT_TRUE(bounded) << bounded.error().to_string();
  EXPECT_TRUE(bounded->at_bound);
  EXPECT_LE(bounded->bytes, 4096u);
  EXPECT_EQ(bounded->max_bytes, 4096u);
  EXPECT_LT(bounded->capacity, 40'000u);
  EXPECT_GT(bounded->false_positive_rate, big->false_positive_rate * 10) << "what the bound costs: more searches";
  EXPECT_FALSE(idx->chunk_filter_due()) << "full, but a rebuild could not make it larger";
  EXPECT_EQ(answers(), expected);
  // Ingest and merges (the recent table's filter starts over) stay within it.
  GenXorb z = gen_xorb(63, 5000);
  ingest(own(build_shard(ShardSpec{.xorbs = {&z}})));
  ASSERT_TRUE(idx->merge_recent());
  EXPECT_LE(idx->chunk_filter_info().bytes, 4096u);
  EXPECT_FALSE(idx->chunk_filter_due());
  for (const Hash& h : z.raw) ASSERT_EQ(find(h).size(), 1u);
  EXPECT_EQ(answers(), expected);
}

TEST_F(ChunkFilterIndex, StatsShowItsMemory) {
  EXPECT_EQ(stats().chunk_filter.bytes, 0u) << "none built";
  EXPECT_EQ(stats().chunk_filter.max_bytes, Options{}.filter_memory);
  GenXorb x = gen_xorb(71, 1000);
  ingest(own(build_shard(ShardSpec{.xorbs = {&x}})));
  ASSERT_TRUE(idx->build_chunk_filter());
  const ChunkFilterInfo f = stats().chunk_filter;
  EXPECT_TRUE(f.in_service);
  EXPECT_EQ(f.added, 1000u);
  EXPECT_EQ(f.capacity, ChunkFilter::kFloorEntries);
  EXPECT_GE(f.bytes, f.capacity * ChunkFilter::kBitsPerEntry / 8);
  EXPECT_LE(f.bytes, f.max_bytes);
  EXPECT_GT(f.false_positive_rate, 0.0);
  EXPECT_LT(f.false_positive_rate, 0.001) << "1,000 entries in a filter for a million";
}

// Runs the crash test's child on our directory (another process with its own
// environment, as an admin tool writing beside the daemon) until it has
// committed shard `i` and exited. It stops by itself: killed once it said
// so, under load it had sometimes gone on to ingest two more and remove
// shard `i` before the signal landed.
void another_process_ingests(const std::string& dir, std::uint64_t i) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  const std::string shard = std::to_string(i);
  if (pid == 0) {
    dup2(fds[1], 1);
    execl(DEDUPD_CRASH_CHILD, DEDUPD_CRASH_CHILD, dir.c_str(), shard.c_str(), shard.c_str(), nullptr);
    _exit(127);
  }
  close(fds[1]);
  std::string out;
  char c;
  while (read(fds[0], &c, 1) == 1) out += c;
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the other process ended with status " << status;
  ASSERT_EQ(out, "A " + shard + "\n");
}

TEST_F(ChunkFilterIndex, AWriteByAnotherProcessTurnsTheFilterOffUntilRebuilt) {
  GenXorb x = gen_xorb(3, 100);
  ingest(own(build_shard(ShardSpec{.xorbs = {&x}})));
  ASSERT_TRUE(idx->build_chunk_filter());
  constexpr std::uint64_t kOther = 1001;  // a raw (unkeyed) shard of the crash sequence
  ASSERT_NO_FATAL_FAILURE(another_process_ingests(tmp / "idx", kOther));
  CrashShard other = crash_shard(kOther);
  const GenXorb& y = other.own;
  // The filter never saw y's entries: a reader of the newer snapshot must
  // not trust it.
  for (const Hash& h : y.raw) ASSERT_EQ(find_unfiltered(h).size(), 1u);
  EXPECT_FALSE(idx->chunk_filter_info().in_service);
  // Our own next write must not put it back in service either.
  GenXorb z = gen_xorb(5, 10);
  ingest(own(build_shard(ShardSpec{.xorbs = {&z}})));
  EXPECT_FALSE(idx->chunk_filter_info().in_service);
  EXPECT_TRUE(idx->chunk_filter_due());
  for (const Hash& h : y.raw) ASSERT_EQ(find_unfiltered(h).size(), 1u);
  ASSERT_TRUE(idx->build_chunk_filter());
  EXPECT_TRUE(idx->chunk_filter_info().in_service);
  for (const GenXorb* g : std::initializer_list<const GenXorb*>{&x, &y, &z})
    for (const Hash& h : g->raw) ASSERT_EQ(find(h).size(), 1u);
}

TEST_F(ChunkFilterIndex, IsDueWhenFullAndSizedForTheIndex) {
  EXPECT_TRUE(idx->chunk_filter_due()) << "none in service";
  auto info = idx->build_chunk_filter();
  ASSERT_TRUE(info);
  EXPECT_GE(info->capacity, 1u << 20) << "a floor, so a young index is not rebuilt after every shard";
  EXPECT_GE(info->bytes, info->capacity * ChunkFilter::kBitsPerEntry / 8);
  EXPECT_FALSE(idx->chunk_filter_due());
}

// Entries spread over both chunk tables, read a few at a time: a read that
// resumes in the wrong place would leave some out, and a lookup through the
// filter would then miss them.
TEST_F(ChunkFilterIndex, ReadInManySmallSnapshotsItMissesNothing) {
  Options o;
  o.filter_build_entries_per_snapshot = 1000;
  reopen(o);
  // About 400 entries under each key byte in the main table: several pages
  // of duplicates, so reads resume inside a key's pages too.
  GenXorb x = gen_xorb(11, 100'000), y = gen_xorb(12, 3000);
  ingest(own(build_shard(ShardSpec{.xorbs = {&x}})));
  ASSERT_TRUE(idx->merge_recent());
  ingest(own(build_shard(ShardSpec{.xorbs = {&y}})));
  unsigned snapshots = 0;
  auto info = idx->build_chunk_filter([&](unsigned n) {
    snapshots = n + 1;
    return true;
  });
  ASSERT_TRUE(info) << info.error().to_string();
  EXPECT_GE(snapshots, 50u) << "the read did not go a thousand entries or so at a time";
  EXPECT_GE(info->added, 103'000u);
  for (const GenXorb* g : {&x, &y})
    for (const Hash& h : g->raw) ASSERT_EQ(find(h).size(), 1u);
}

// The build reads without the writer lock (the daemon's loop must go on
// ingesting through a minute-long build): a write started while it reads
// completes, and what it wrote is in the filter that goes into service.
TEST_F(ChunkFilterIndex, WritersGoOnWhileItReadsAndWhatTheyWroteIsCovered) {
  Options o;
  o.filter_build_entries_per_snapshot = 50;
  o.merge_threshold = 1u << 30;  // merged only when the test says
  reopen(o);
  GenXorb before = gen_xorb(21, 400), during = gen_xorb(22, 300), gone = gen_xorb(23, 100);
  ingest(own(build_shard(ShardSpec{.xorbs = {&before}})));
  OwnedShard gone_shard = own(build_shard(ShardSpec{.xorbs = {&gone}}));
  ingest(gone_shard);
  // Kept out here: a future left waiting in the callback would block the
  // build on its way out, and a build holding the lock would hang the test
  // instead of failing it.
  std::vector<std::future<void>> writes;
  auto info = idx->build_chunk_filter([&](unsigned n) {
    std::future<void> write;
    if (n == 1) {  // mid-way through the recent table: its entries move to the main one
      write = std::async(std::launch::async, [&] { ASSERT_TRUE(idx->merge_recent()); });
    } else if (n == 3) {  // a shard goes
      write = std::async(std::launch::async, [&] {
        auto r = idx->remove(gone_shard.hash, 1);
        ASSERT_TRUE(r) << r.error().to_string();
      });
    } else if (n == 5) {  // a new shard, in the recent table already read: only the catch-up has it
      write = std::async(std::launch::async, [&] { ingest(own(build_shard(ShardSpec{.xorbs = {&during}}))); });
    }
    if (!write.valid()) return true;
    EXPECT_EQ(write.wait_for(std::chrono::seconds(30)), std::future_status::ready)
        << "a write waited on the build (snapshot " << n << ")";
    writes.push_back(std::move(write));
    return true;
  });
  ASSERT_TRUE(info) << info.error().to_string();
  EXPECT_TRUE(idx->chunk_filter_info().in_service);
  EXPECT_GE(info->added, 700u);  // and those of `gone` read before it went
  for (const GenXorb* g : {&before, &during})
    for (const Hash& h : g->raw) ASSERT_EQ(find(h).size(), 1u);
  for (const Hash& h : gone.raw) EXPECT_TRUE(find(h).empty());
  EXPECT_THAT(problems(), ::testing::IsEmpty());
}

// What the writer logs for a build is bounded: past the bound the build is
// given up (and its log freed) rather than the daemon's memory growing with
// the ingest rate times the build's length.
TEST_F(ChunkFilterIndex, TooMuchWrittenMeanwhileGivesTheBuildUp) {
  const std::size_t saved = detail::g_filter_catch_up_entries;
  detail::g_filter_catch_up_entries = 100;
  Options o;
  o.filter_build_entries_per_snapshot = 10;
  reopen(o);
  GenXorb x = gen_xorb(41, 300), y = gen_xorb(42, 300);
  ingest(own(build_shard(ShardSpec{.xorbs = {&x}})));
  std::vector<std::future<void>> writes;
  auto over = idx->build_chunk_filter([&](unsigned n) {
    if (n == 1) {
      writes.push_back(std::async(std::launch::async, [&] { ingest(own(build_shard(ShardSpec{.xorbs = {&y}}))); }));
      writes.back().wait();
    }
    return true;
  });
  detail::g_filter_catch_up_entries = saved;
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().rule, std::string(kRuleLimit)) << over.error().to_string();
  EXPECT_FALSE(idx->chunk_filter_info().in_service);
  auto again = idx->build_chunk_filter();
  ASSERT_TRUE(again) << again.error().to_string();
  for (const GenXorb* g : {&x, &y})
    for (const Hash& h : g->raw) ASSERT_EQ(find(h).size(), 1u);
}

TEST_F(ChunkFilterIndex, ABuildGivenUpLeavesTheFilterAsItWas) {
  Options o;
  o.filter_build_entries_per_snapshot = 10;
  reopen(o);
  GenXorb x = gen_xorb(31, 500);
  ingest(own(build_shard(ShardSpec{.xorbs = {&x}})));
  auto given_up = idx->build_chunk_filter([](unsigned n) { return n < 3; });
  EXPECT_FALSE(given_up);
  EXPECT_FALSE(idx->chunk_filter_info().in_service);
  for (const Hash& h : x.raw) ASSERT_EQ(find_unfiltered(h).size(), 1u);
  ASSERT_TRUE(idx->build_chunk_filter()) << "a build given up must not leave one 'under way'";
  for (const Hash& h : x.raw) ASSERT_EQ(find(h).size(), 1u);
}

}  // namespace
}  // namespace dedupd::index::gen
