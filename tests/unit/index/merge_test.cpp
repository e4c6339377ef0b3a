// Merging the recent chunk table into the main one (index/merge.cpp): a
// step stops taking keys past its entries, a merge goes on across ingests a
// slice at a time with every entry found at every point, and a key that
// grows enough is written afresh with its pages full. The bounds are shrunk
// so that small shards cross them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <lmdb.h>

#include "index/records.hpp"
#include "index/tuning.hpp"
#include "tests/unit/index/support.hpp"

namespace dedupd::index::gen {
namespace {

using ::testing::IsEmpty;

// The id of the last committed write transaction, read while no Index has
// the directory open.
std::size_t last_txn(const std::string& dir) {
  gen::RawIndex raw(dir);
  MDB_envinfo info{};
  mdb_env_info(raw.env(), &info);
  return info.me_last_txnid;
}

TEST(MergeSteps, AStepStopsTakingKeysPastItsEntries) {
  const std::uint64_t saved = detail::g_merge_step_entries;
  TempDir tmp;
  Options o;
  o.dir = tmp / "idx";
  o.merge_threshold = 1u << 30;  // merged only when asked
  auto a = skewed_xorb(110, 300, 0x10), b = skewed_xorb(111, 300, 0x20), c = skewed_xorb(112, 300, 0x30);
  auto merge_in_steps = [&](const OwnedShard& s) {
    {
      auto idx = Index::open(o);
      EXPECT_TRUE(idx) << idx.error().to_string();
      EXPECT_TRUE((*idx)->ingest(*s.view, SourceInfo{}, {}));
    }
    std::size_t before = last_txn(o.dir);
    auto idx = Index::open(o);
    EXPECT_TRUE(idx) << idx.error().to_string();
    EXPECT_TRUE((*idx)->merge_recent());
    EXPECT_EQ((*idx)->stats()->recent_chunk_entries, 0u);
    EXPECT_THAT(*(*idx)->check_invariants(), IsEmpty());
    idx->reset();
    return last_txn(o.dir) - before;
  };
  // Bound 1: every step takes one key (300 entries, then 600 once the main
  // table holds the first shard's).
  detail::g_merge_step_entries = 1;
  EXPECT_EQ(merge_in_steps(own(build_shard({.xorbs = {&a, &b, &c}}))), 3u);
  detail::g_merge_step_entries = 1000;
  auto d = skewed_xorb(113, 300, 0x10), e = skewed_xorb(114, 300, 0x20), f = skewed_xorb(115, 300, 0x30);
  EXPECT_EQ(merge_in_steps(own(build_shard({.xorbs = {&d, &e, &f}}))), 3u);  // 600 + 600 > 1000
  detail::g_merge_step_entries = 1u << 19;
  auto g = skewed_xorb(116, 300, 0x10), h = skewed_xorb(117, 300, 0x20), i = skewed_xorb(118, 300, 0x30);
  EXPECT_EQ(merge_in_steps(own(build_shard({.xorbs = {&g, &h, &i}}))), 1u);
  detail::g_merge_step_entries = saved;

  auto idx = Index::open(o);
  ASSERT_TRUE(idx);
  EXPECT_EQ((*idx)->stats()->chunk_entries, 2700u);
  // Each merge put its entries between those of the one before.
  for (const GenXorb* x : {&a, &b, &c, &d, &e, &f, &g, &h, &i})
    for (std::size_t n = 0; n < x->raw.size(); ++n) {
      auto loc = (*idx)->lookup(x->raw[n]);
      ASSERT_TRUE(loc);
      ASSERT_EQ(loc->size(), 1u);
      EXPECT_EQ((*loc)[0].xorb, x->hash);
      EXPECT_EQ((*loc)[0].chunk_index, n);
    }
}

// A merge rewrites nearly every page of the main table; at 268 M entries
// that held the daemon's work loop (and its watchdog) for seconds. It goes
// a slice at a time: an ingest returns once its slice has passed, and the
// merge goes on after the next one; entries added behind the sweep wait for
// the next one. Lookups find everything at every point.
TEST(MergeSteps, AMergeGoesOnAcrossIngestsASliceAtATime) {
  const std::uint64_t saved = detail::g_merge_step_entries;
  detail::g_merge_step_entries = 1;  // one key byte a step
  TempDir tmp;
  Options o;
  o.dir = tmp / "idx";
  o.merge_threshold = 100;
  o.merge_slice = std::chrono::milliseconds(0);  // one step an ingest
  auto idx = Index::open(o);
  ASSERT_TRUE(idx) << idx.error().to_string();
  // Lookups through the filters: the recent one is refilled when a sweep
  // leaves entries behind, and must hold them.
  ASSERT_TRUE((*idx)->build_chunk_filter());
  std::vector<GenXorb> xorbs;
  xorbs.reserve(16);
  std::uint64_t entries = 0;
  auto ingest = [&](std::vector<std::pair<std::size_t, std::uint8_t>> parts) {
    std::vector<const GenXorb*> in;
    for (auto [n, first] : parts) {
      xorbs.push_back(skewed_xorb(120 + xorbs.size(), n, first));
      in.push_back(&xorbs.back());
      entries += n;
    }
    OwnedShard s = own(build_shard({.xorbs = in}));
    ASSERT_TRUE((*idx)->ingest(*s.view, SourceInfo{}, {}));
    for (const GenXorb& x : xorbs)
      for (const Hash& h : x.raw) ASSERT_EQ((*idx)->lookup(h)->size(), 1u);
    EXPECT_THAT(*(*idx)->check_invariants(), IsEmpty());
  };
  auto recent = [&] { return (*idx)->stats()->recent_chunk_entries; };
  ingest({{300, 0x10}, {300, 0x20}, {300, 0x30}});
  EXPECT_EQ(recent(), 600u) << "the merge did not stop after its slice";
  ingest({{50, 0x05}});  // behind the sweep
  EXPECT_EQ(recent(), 350u) << "the merge did not go on where it stopped";
  ingest({{1, 0x05}});
  EXPECT_EQ(recent(), 51u);
  ingest({{1, 0x05}});
  EXPECT_EQ(recent(), 52u) << "the sweep is over: what came in behind it waits (a new sweep is due past 100)";
  ingest({{60, 0x05}});
  detail::g_merge_step_entries = saved;
  EXPECT_EQ(recent(), 0u) << "a new sweep did not start once due";
  EXPECT_EQ((*idx)->stats()->chunk_entries, entries);
}

// Merged in place, the new entries of a key fall between the old ones and
// split pages: they stay two thirds full, and the index a third larger than
// it needs to be (57.6 B an entry at 10 M, of which 12 B are the entry).
// A merge that brings a key at least 1/64 more entries writes the key
// afresh in order, every page full; a smaller one merges in place.
TEST(MergeSteps, AMergeWritesAKeyAfreshWithItsPagesFull) {
  const std::uint64_t saved = detail::g_merge_rewrite_entries;
  const std::size_t per_page = (4096 - 16) / records::kChunkValueBytes;
  auto pages_after_rounds = [&](std::uint64_t rewrite_up_to, std::size_t& entries) {
    detail::g_merge_rewrite_entries = rewrite_up_to;
    TempDir tmp;
    Options o;
    o.dir = tmp / "idx";
    o.merge_threshold = 1u << 30;  // merged only when asked
    std::vector<GenXorb> xorbs;
    entries = 0;
    {
      auto idx = Index::open(o);
      EXPECT_TRUE(idx) << idx.error().to_string();
      for (std::uint64_t round = 0; round < 8; ++round) {
        xorbs.push_back(skewed_xorb(200 + round, 3000, 0x30));
        entries += 3000;
        OwnedShard s = own(build_shard({.xorbs = {&xorbs.back()}}));
        EXPECT_TRUE((*idx)->ingest(*s.view, SourceInfo{}, {}));
        EXPECT_TRUE((*idx)->merge_recent());
      }
      for (const GenXorb& x : xorbs)
        for (std::size_t n = 0; n < x.raw.size(); ++n) {
          auto loc = (*idx)->lookup(x.raw[n]);
          EXPECT_TRUE(loc && loc->size() == 1 && (*loc)[0].xorb == x.hash && (*loc)[0].chunk_index == n);
        }
      EXPECT_THAT(*(*idx)->check_invariants(), IsEmpty());
    }
    std::size_t pages = pages_of_key(o.dir, "chunks", 0x30);
    // Then a few more: in place, pages split only where they land.
    {
      auto idx = Index::open(o);
      EXPECT_TRUE(idx) << idx.error().to_string();
      xorbs.push_back(skewed_xorb(300, 100, 0x30));
      OwnedShard s = own(build_shard({.xorbs = {&xorbs.back()}}));
      EXPECT_TRUE((*idx)->ingest(*s.view, SourceInfo{}, {}));
      EXPECT_TRUE((*idx)->merge_recent());
      for (const Hash& h : xorbs.back().raw) EXPECT_EQ((*idx)->lookup(h)->size(), 1u);
      EXPECT_EQ((*idx)->stats()->chunk_entries, entries + 100);
      EXPECT_THAT(*(*idx)->check_invariants(), IsEmpty());
    }
    EXPECT_LE(pages_of_key(o.dir, "chunks", 0x30), pages + 100) << "a small merge rewrote the key";
    return pages;
  };
  std::size_t entries = 0;
  const std::size_t afresh = pages_after_rounds(saved, entries);
  const std::size_t full = (entries + per_page - 1) / per_page;
  EXPECT_EQ(afresh, full) << entries << " entries";
  const std::size_t in_place = pages_after_rounds(0, entries);
  EXPECT_GT(in_place, full + full / 4) << "merged in place, pages should be about two thirds full";
  detail::g_merge_rewrite_entries = saved;
}

}  // namespace
}  // namespace dedupd::index::gen
