// What bounds an ingest's write transaction (index/tuning.hpp): ingest writes
// a shard's chunk entries in bounded sorted runs, appending where it can
// (EntryWriter in ingest.cpp). These tests shrink the bound so that small
// shards cross it, and check that every entry lands exactly once whichever
// way it was written. A merge's steps are in merge_test.cpp.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <lmdb.h>

#include "index/records.hpp"
#include "index/tuning.hpp"
#include "tests/unit/index/support.hpp"

namespace dedupd::index::gen {
namespace {

using ::testing::IsEmpty;

class IngestRuns : public IndexFixture, public ::testing::WithParamInterface<bool> {
 protected:
  void SetUp() override {
    saved_ = detail::g_ingest_run_entries;
    detail::g_ingest_run_entries = 64;
    merge_threshold = 1u << 30;  // entries stay in the recent table
    chunk_filter = GetParam();
    reopen();
  }
  void TearDown() override { detail::g_ingest_run_entries = saved_; }

  void expect_all_found(const GenXorb& x) {
    for (std::size_t i = 0; i < x.raw.size(); ++i) {
      auto loc = find(x.raw[i]);
      ASSERT_EQ(loc.size(), 1u) << "chunk " << i;
      EXPECT_EQ(loc[0].xorb, x.hash);
      EXPECT_EQ(loc[0].chunk_index, i);
    }
  }

  std::size_t saved_ = 0;
};
INSTANTIATE_TEST_SUITE_P(Filter, IngestRuns, ::testing::Values(false, true),
                         [](const auto& test) { return test.param ? "filtered" : "unfiltered"; });

TEST_P(IngestRuns, AShardOfManyRunsLandsWhole) {
  auto x1 = gen_xorb(101, 3000), x2 = gen_xorb(102, 700);
  auto s = own(build_shard({.xorbs = {&x1, &x2}}));
  EXPECT_EQ(ingest(s).new_chunk_entries, 3700u);
  EXPECT_EQ(stats().chunk_entries, 3700u);
  EXPECT_EQ(stats().recent_chunk_entries, 3700u);
  expect_all_found(x1);
  expect_all_found(x2);
  EXPECT_THAT(problems(), IsEmpty());
}

TEST_P(IngestRuns, AKeyWithMoreEntriesThanARunLandsWhole) {
  // 1000 entries of one key: sixteen runs of that key alone, each partly
  // below the entries the previous runs stored.
  auto skewed = skewed_xorb(103, 1000, 0x42), spread = gen_xorb(104, 500);
  auto s = own(build_shard({.xorbs = {&spread, &skewed}}));
  EXPECT_EQ(ingest(s).new_chunk_entries, 1500u);
  EXPECT_EQ(stats().chunk_entries, 1500u);
  expect_all_found(skewed);
  expect_all_found(spread);
  EXPECT_THAT(problems(), IsEmpty());
}

TEST_P(IngestRuns, EntriesBetweenThoseOfAnEarlierShardLandWhole) {
  // The second shard's entries of key 0x42 fall between the first's: some
  // are ordinary puts, the rest appends past the first shard's last entry.
  detail::g_ingest_run_entries = 1u << 18;
  auto a = skewed_xorb(105, 800, 0x42), b = skewed_xorb(106, 800, 0x42);
  auto s1 = own(build_shard({.xorbs = {&a}})), s2 = own(build_shard({.xorbs = {&b}}));
  ingest(s1);
  ingest(s2);
  EXPECT_EQ(stats().recent_chunk_entries, 1600u);
  expect_all_found(a);
  expect_all_found(b);
  EXPECT_THAT(problems(), IsEmpty());
  ASSERT_TRUE(idx->remove(s1.hash));
  EXPECT_THAT(find(a.raw[0]), IsEmpty());
  expect_all_found(b);
  ASSERT_TRUE(idx->merge_recent());
  EXPECT_EQ(stats().chunk_entries, 800u);
  EXPECT_EQ(stats().recent_chunk_entries, 0u);
  expect_all_found(b);
  EXPECT_THAT(problems(), IsEmpty());
}

TEST_P(IngestRuns, AKeyedShardOfManyRunsLandsWhole) {
  Key key;
  for (std::size_t i = 0; i < 32; ++i) key.bytes[i] = std::uint8_t(3 * i + 7);
  auto x = gen_xorb(107, 2000);
  auto s = own(build_shard({.xorbs = {&x}, .key = key}));
  EXPECT_EQ(ingest(s).new_chunk_entries, 2000u);
  expect_all_found(x);
  EXPECT_THAT(problems(), IsEmpty());
}

TEST_P(IngestRuns, RemovalInManyRunsTakesOnlyItsOwnEntries) {
  // Removal deletes a shard's entries in sorted runs of a few: split across
  // runs, between entries of shards that stay, in both chunk tables.
  const std::size_t saved_runs = detail::g_remove_run_entries;
  detail::g_remove_run_entries = 100;
  auto gone1 = gen_xorb(120, 700), gone2 = skewed_xorb(121, 300, 0x42), kept = skewed_xorb(122, 500, 0x42);
  auto merged = gen_xorb(123, 400);
  auto s_merged = own(build_shard({.xorbs = {&merged}}));
  ingest(s_merged);
  ASSERT_TRUE(idx->merge_recent());  // in the main table from here on
  auto s_gone = own(build_shard({.xorbs = {&gone1, &gone2, &merged}}));
  auto s_kept = own(build_shard({.xorbs = {&kept}}));
  ingest(s_gone);
  ingest(s_kept);
  auto r = idx->remove(s_gone.hash);
  detail::g_remove_run_entries = saved_runs;
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->outcome, RemoveOutcome::removed);
  for (const GenXorb* x : {&gone1, &gone2})
    for (const Hash& h : x->raw) EXPECT_THAT(find(h), IsEmpty());
  expect_all_found(kept);
  expect_all_found(merged);  // shared with a shard that stays
  EXPECT_EQ(stats().chunk_entries, 900u);
  EXPECT_THAT(problems(), IsEmpty());
}

TEST(IngestPages, EntriesOfKeysNewToTheRecentTableFillTheirPages) {
  // Appends leave full pages; sorted ordinary puts would split each page in
  // half, and the write transaction would hold (in memory) twice the pages.
  // 6000 entries of a key are six MDB_MULTIPLE blocks.
  TempDir tmp;
  Options o;
  o.dir = tmp / "idx";
  o.merge_threshold = 1u << 30;
  auto idx = Index::open(o);
  ASSERT_TRUE(idx) << idx.error().to_string();
  auto a = skewed_xorb(108, 6000, 0x10), b = skewed_xorb(109, 6000, 0x20);
  auto s = own(build_shard({.xorbs = {&a, &b}}));
  ASSERT_TRUE((*idx)->ingest(*s.view, SourceInfo{}, {}));
  for (const GenXorb* x : {&a, &b})
    for (std::size_t i = 0; i < x->raw.size(); ++i) {
      auto loc = (*idx)->lookup(x->raw[i]);
      ASSERT_TRUE(loc);
      ASSERT_EQ(loc->size(), 1u) << i;
      EXPECT_EQ((*loc)[0].chunk_index, i);
    }
  EXPECT_THAT(*(*idx)->check_invariants(), IsEmpty());
  idx->reset();
  const std::size_t per_page = (4096 - 16) / records::kChunkValueBytes, full = (6000 + per_page - 1) / per_page;
  EXPECT_LE(pages_of_key(o.dir, "chunks_recent", 0x10), full);
  EXPECT_LE(pages_of_key(o.dir, "chunks_recent", 0x20), full);
  EXPECT_GE(pages_of_key(o.dir, "chunks_recent", 0x10), full);
}

}  // namespace
}  // namespace dedupd::index::gen
