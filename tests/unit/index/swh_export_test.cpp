// The Software Heritage export of the index (index/swh_export.hpp): the file
// answers every raw chunk with all its locations and nothing keyed; an index
// without raw chunks exports nothing.
#include "index/swh_export.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "swh/location.hpp"
#include "swh/read_shard.hpp"
#include "tests/unit/index/export_fixture.hpp"

namespace dedupd::index::gen {
namespace {

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
