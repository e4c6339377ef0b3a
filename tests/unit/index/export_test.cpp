// The raw-chunk walk (index/export.hpp): every raw chunk once, in hash
// order, with all its locations; keyed forms left out.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/unit/index/export_fixture.hpp"

namespace dedupd::index::gen {
namespace {

TEST_F(ExportTest, EveryRawChunkOnceInHashOrderWithAllItsLocations) {
  for (bool merge_between : {false, true}) {
    SCOPED_TRACE(merge_between ? "entries in both chunk tables" : "entries in the recent table");
    reopen();
    fill(merge_between);
    Seen s = walk();
    auto all = raw_chunks();
    EXPECT_EQ(s.order.size(), all.size());  // 40 + 25 + 10 - (a.raw[30] == a.raw[7]) - (c.raw[3] == a.raw[5])
    EXPECT_EQ(all.size(), 73u);
    EXPECT_TRUE(std::is_sorted(s.order.begin(), s.order.end(), less_bytes));
    for (const Hash& h : all) {
      ASSERT_TRUE(s.locations.count(h)) << h.to_string();
      EXPECT_EQ(s.locations[h], expected(h)) << h.to_string();
    }
    // The chunk in two xorbs, and the chunk twice in one xorb.
    ASSERT_EQ(s.locations[a.raw[5]].size(), 2u);
    std::set<Hash, HashLess> xorbs{s.locations[a.raw[5]][0].xorb, s.locations[a.raw[5]][1].xorb};
    EXPECT_EQ(xorbs, (std::set<Hash, HashLess>{a.hash, c.hash}));
    ASSERT_EQ(s.locations[a.raw[7]].size(), 2u);
    EXPECT_EQ(s.locations[a.raw[7]][0].chunk_index, 7u);
    EXPECT_EQ(s.locations[a.raw[7]][1].chunk_index, 30u);
    EXPECT_EQ(s.locations[a.raw[7]][1].byte_start, a.byte_start(30));
    EXPECT_EQ(s.locations[a.raw[7]][1].byte_end, a.byte_start(30) + a.sizes[30]);
    // Keyed-only chunks never show up, under either hash.
    for (const Hash& h : k.raw) {
      EXPECT_FALSE(s.locations.count(h));
      EXPECT_FALSE(s.locations.count(shard::keyed_chunk_hash(key, h)));
    }
    EXPECT_EQ(s.counts.chunks, 73u);
    EXPECT_EQ(s.counts.locations, 75u);
    EXPECT_EQ(s.counts.keyed_entries, 12u + 40u);
  }
}

TEST_F(ExportTest, RemovedShardsLeaveTheWalk) {
  c = gen_xorb(3, 10);
  auto sc = own(build_shard({.xorbs = {&c}}));
  ingest(sc);
  EXPECT_EQ(walk().counts.chunks, 10u);
  ASSERT_TRUE(idx->remove(sc.hash));
  Seen s = walk();
  EXPECT_EQ(s.counts.chunks, 0u);
  EXPECT_TRUE(s.order.empty());
}

TEST_F(ExportTest, AVisitorErrorStopsTheWalk) {
  fill(false);
  int calls = 0;
  auto r = for_each_raw_chunk(*idx, [&](const Hash&, std::span<const RawLocation>) -> Status {
    if (++calls == 3) return make_error("test.stop", "enough");
    return Ok{};
  });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().rule, "test.stop");
  EXPECT_EQ(calls, 3);
}

}  // namespace
}  // namespace dedupd::index::gen
