// IndexTest: a test of the Index under each of the four layouts of its
// tables (index_test.cpp instantiates them for every file's TEST_P).
#pragma once

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "index/records.hpp"
#include "tests/unit/index/support.hpp"

namespace dedupd::index::gen {

// The shards of a location, in its order.
inline std::vector<Hash> shard_hashes(const std::vector<ShardRef>& refs) {
  std::vector<Hash> out;
  for (const auto& r : refs) out.push_back(r.shard);
  return out;
}

// Every IndexTest runs four times: with new chunk entries left in the recent
// table or with every ingest merging them into the main table, each without
// and with the in-memory chunk filter (which must never change an answer).
struct Layout {
  bool merged;
  bool filtered;
};
class IndexTest : public IndexFixture, public ::testing::WithParamInterface<Layout> {
 protected:
  void SetUp() override {
    merge_threshold = GetParam().merged ? 0 : 1u << 30;
    chunk_filter = GetParam().filtered;
    reopen();
  }

  // The layout and size of each stored form of a xorb, read raw (the index
  // is closed for it and opened again).
  std::vector<std::pair<records::XorbLayout, std::size_t>> stored_forms(const Hash& xorb) {
    idx.reset();
    std::vector<std::pair<records::XorbLayout, std::size_t>> out;
    for (const auto& [id, rec] : stored_xorb_records(tmp / "idx")) {
      auto view = records::XorbRecordView::decode(records::val(rec));
      EXPECT_TRUE(view) << "xorb id " << id;
      if (view && view->xorb_hash() == xorb) out.emplace_back(view->layout(), rec.size());
    }
    reopen();
    return out;
  }

  // The index gives back the CAS block byte for byte, and every chunk's
  // range and flags.
  void expect_rebuilt(const shard::XorbBlock& b) {
    auto forms = idx->xorb(b.hash());
    ASSERT_TRUE(forms);
    ASSERT_EQ(forms->size(), 1u);
    auto raw = b.raw();
    EXPECT_EQ(forms->front().cas_block, std::vector<std::uint8_t>(raw.begin(), raw.end()));
    ASSERT_EQ(forms->front().chunks.size(), b.num_chunks());
    for (std::uint32_t i = 0; i < b.num_chunks(); ++i) {
      shard::ChunkEntry c = b.chunk(i);
      auto locs = find(c.chunk_hash);
      ASSERT_EQ(locs.size(), 1u) << i;
      EXPECT_EQ(locs[0].chunk_index, i);
      EXPECT_EQ(locs[0].byte_start, c.byte_start) << i;
      EXPECT_EQ(locs[0].unpacked_bytes, c.unpacked_bytes) << i;
      EXPECT_EQ(locs[0].flags, c.flags) << i;
      EXPECT_EQ(forms->front().chunks[i].byte_start, c.byte_start) << i;
      EXPECT_EQ(forms->front().chunks[i].unpacked_bytes, c.unpacked_bytes) << i;
    }
  }
};

}  // namespace dedupd::index::gen
