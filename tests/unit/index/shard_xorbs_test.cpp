// Index::shard_xorbs: the xorbs a live shard brought, in its order, as it
// stored them (the global-dedup reply is built from them).
#include <gtest/gtest.h>

#include "tests/unit/index/support.hpp"

namespace dedupd::index::gen {
namespace {

using ShardXorbs = IndexFixture;

std::vector<std::size_t> all(std::span<const Index::XorbHead> heads) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < heads.size(); ++i) out.push_back(i);
  return out;
}

TEST_F(ShardXorbs, HeadsInShardOrderAndTheChosenRecordsAsStored) {
  GenXorb a = gen_xorb(1, 3), b = gen_xorb(2, 5), c = gen_xorb(3, 2);
  OwnedShard s = own(build_shard({.xorbs = {&b, &a, &c}}));
  ingest(s);

  std::vector<Index::XorbHead> seen;
  auto r = idx->shard_xorbs(s.hash, [&](std::span<const Index::XorbHead> heads) {
    seen.assign(heads.begin(), heads.end());
    return std::vector<std::size_t>{2, 0};
  });
  ASSERT_TRUE(r) << r.error().to_string();
  ASSERT_TRUE(r->has_value());
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].hash, b.hash);
  EXPECT_EQ(seen[0].chunks, 5u);
  EXPECT_EQ(seen[1].hash, a.hash);
  EXPECT_EQ(seen[2].hash, c.hash);

  const auto& records = **r;
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].header.xorb_hash, c.hash);
  EXPECT_EQ(records[1].header.xorb_hash, b.hash);
  ASSERT_EQ(records[1].chunks.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(records[1].chunks[i].chunk_hash, b.raw[i]);
    EXPECT_EQ(records[1].chunks[i].byte_start, b.byte_start(i));
    EXPECT_EQ(records[1].chunks[i].unpacked_bytes, b.sizes[i]);
  }
}

TEST_F(ShardXorbs, AKeyedShardGivesItsKeyedForm) {
  GenXorb a = gen_xorb(4, 3);
  const Key key = hash_of_seed(77);
  OwnedShard raw = own(build_shard({.xorbs = {&a}}));
  OwnedShard keyed = own(build_shard({.xorbs = {&a}, .key = key}));
  ingest(raw);
  ingest(keyed);
  auto r = idx->shard_xorbs(keyed.hash, all);
  ASSERT_TRUE(r) << r.error().to_string();
  ASSERT_TRUE(r->has_value());
  ASSERT_EQ((*r)->size(), 1u);
  EXPECT_EQ((**r)[0].chunks[1].chunk_hash, shard::keyed_chunk_hash(key, a.raw[1]));
  r = idx->shard_xorbs(raw.hash, all);
  ASSERT_TRUE(r && r->has_value());
  EXPECT_EQ((**r)[0].chunks[1].chunk_hash, a.raw[1]);
}

TEST_F(ShardXorbs, OnlyLiveShardsAnswer) {
  GenXorb a = gen_xorb(5, 2);
  OwnedShard s = own(build_shard({.xorbs = {&a, &a}}));  // listed twice, brought once
  ingest(s);
  auto r = idx->shard_xorbs(s.hash, all);
  ASSERT_TRUE(r && r->has_value());
  EXPECT_EQ((*r)->size(), 1u);
  ASSERT_TRUE(idx->remove(s.hash));
  r = idx->shard_xorbs(s.hash, all);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_FALSE(r->has_value());
  r = idx->shard_xorbs(hash_of_seed(123), all);
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->has_value());
}

TEST_F(ShardXorbs, APositionPastTheEndIsAnArgumentError) {
  GenXorb a = gen_xorb(6, 2);
  OwnedShard s = own(build_shard({.xorbs = {&a}}));
  ingest(s);
  auto r = idx->shard_xorbs(s.hash, [](std::span<const Index::XorbHead>) { return std::vector<std::size_t>{1}; });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().rule, kRuleArgument);
}

}  // namespace
}  // namespace dedupd::index::gen
