// The raw-chunk walk (index/export.hpp) and the Software Heritage export
// built on it (index/swh_export.hpp): every raw chunk once, in hash order,
// with all its locations; keyed forms left out; the file answers lookups.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "index/export.hpp"
#include "index/swh_export.hpp"
#include "swh/location.hpp"
#include "swh/read_shard.hpp"
#include "tests/unit/index/support.hpp"

namespace dedupd::index::gen {
namespace {

bool less_bytes(const Hash& a, const Hash& b) { return std::memcmp(a.data(), b.data(), 32) < 0; }

struct HashLess {
  bool operator()(const Hash& a, const Hash& b) const { return less_bytes(a, b); }
};

// What a walk of the index saw.
struct Seen {
  std::vector<Hash> order;
  std::map<Hash, std::vector<RawLocation>, HashLess> locations;
  WalkCounts counts;
};

class ExportTest : public IndexFixture {
 protected:
  // raw shard A: xorbs a (40 chunks, chunk 7 repeated at 30) and b (25);
  // raw shard B: xorb c (10 chunks), whose chunk 3 is a's chunk 5;
  // keyed shard K: xorb k (12 chunks, only there) and a's keyed form.
  void fill(bool merge_between) {
    a = gen_xorb(1, 40);
    a.raw[30] = a.raw[7];
    b = gen_xorb(2, 25);
    c = gen_xorb(3, 10);
    c.raw[3] = a.raw[5];
    k = gen_xorb(4, 12);
    key = hash_of_seed(4242);
    ingest(own(build_shard({.xorbs = {&a, &b}})));
    if (merge_between) {
      ASSERT_TRUE(idx->merge_recent());
    }
    ingest(own(build_shard({.xorbs = {&c}, .created = 1700000001})));
    ingest(own(build_shard({.xorbs = {&k, &a}, .key = key, .expiry = 2200000000})));
  }

  Seen walk() {
    Seen s;
    auto r = for_each_raw_chunk(*idx, [&](const Hash& h, std::span<const RawLocation> locs) -> Status {
      s.order.push_back(h);
      EXPECT_FALSE(locs.empty());
      EXPECT_TRUE(s.locations.emplace(h, std::vector<RawLocation>(locs.begin(), locs.end())).second)
          << "visited twice: " << h.to_string();
      return Ok{};
    });
    EXPECT_TRUE(r) << (r ? "" : r.error().to_string());
    if (r) s.counts = *r;
    return s;
  }

  // The index's own answer for a raw hash, keeping locations a raw shard holds.
  std::vector<RawLocation> expected(const Hash& raw) {
    std::vector<RawLocation> out;
    for (const Location& l : find(raw)) {
      if (std::none_of(l.shards.begin(), l.shards.end(), [](const ShardRef& s) { return !s.keyed; })) continue;
      out.push_back({l.xorb, l.chunk_index, l.byte_start, l.byte_end, l.unpacked_bytes, l.flags});
    }
    std::sort(out.begin(), out.end(), [](const RawLocation& x, const RawLocation& y) {
      if (int order = std::memcmp(x.xorb.data(), y.xorb.data(), 32)) return order < 0;
      return x.chunk_index < y.chunk_index;
    });
    return out;
  }

  std::set<Hash, HashLess> raw_chunks() const {
    std::set<Hash, HashLess> all;
    for (const GenXorb* x : {&a, &b, &c}) all.insert(x->raw.begin(), x->raw.end());
    return all;
  }

  GenXorb a, b, c, k;
  Key key{};
};

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

TEST_F(ExportTest, SwhShardAnswersEveryRawChunkAndNothingKeyed) {
  fill(true);
  const std::string path = tmp / "snapshot.swh";
  auto e = export_swh_shard(*idx, path);
  ASSERT_TRUE(e) << e.error().to_string();
  EXPECT_EQ(e->keys, 73u);
  EXPECT_EQ(e->locations, 75u);
  EXPECT_EQ(e->keyed_entries, 52u);
  EXPECT_EQ(e->header.objects_count, 73u);
  EXPECT_EQ(e->file_bytes, std::filesystem::file_size(path));

  auto reader = swh::Reader::open(path);
  ASSERT_TRUE(reader) << reader.error().to_string();
  for (const Hash& h : raw_chunks()) {
    auto got = reader->lookup(h.bytes);
    ASSERT_TRUE(got) << got.error().to_string();
    ASSERT_TRUE(got->has_value()) << "absent: " << h.to_string();
    auto locs = swh::decode_locations(**got);
    ASSERT_TRUE(locs) << locs.error().to_string();
    std::vector<swh::Location> want;
    for (const RawLocation& l : expected(h))
      want.push_back({l.xorb, l.chunk_index, l.byte_start, l.byte_end, l.unpacked_bytes});
    EXPECT_EQ(*locs, want) << h.to_string();
  }
  for (const Hash& h : k.raw) {
    for (const Hash& q : {h, shard::keyed_chunk_hash(key, h)}) {
      auto got = reader->lookup(q.bytes);
      ASSERT_TRUE(got);
      EXPECT_FALSE(got->has_value()) << "keyed-only chunk exported: " << q.to_string();
    }
  }
  auto absent = reader->lookup(hash_of_seed(999999).bytes);
  ASSERT_TRUE(absent);
  EXPECT_FALSE(absent->has_value());
}

TEST_F(ExportTest, AnIndexWithoutRawChunksExportsNothing) {
  k = gen_xorb(4, 12);
  ingest(own(build_shard({.xorbs = {&k}, .key = hash_of_seed(7), .expiry = 2200000000})));
  const std::string path = tmp / "empty.swh";
  auto e = export_swh_shard(*idx, path);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().rule, kRuleSwhEmpty);
  EXPECT_FALSE(std::filesystem::exists(path));
  // No temporary file left behind either.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(tmp.path()), {}), 1);  // idx/
}

}  // namespace
}  // namespace dedupd::index::gen
