// The index the export tests walk (index/export.hpp, index/swh_export.hpp):
// raw and keyed shards, the walk's record of what it saw, and the index's
// own answer to compare with.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "index/export.hpp"
#include "tests/unit/index/support.hpp"

namespace dedupd::index::gen {

inline bool less_bytes(const Hash& a, const Hash& b) { return std::memcmp(a.data(), b.data(), 32) < 0; }

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

}  // namespace dedupd::index::gen
