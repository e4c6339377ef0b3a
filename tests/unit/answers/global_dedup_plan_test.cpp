// The choices behind a global-dedup reply, as pure functions of what the
// index or the fleet said: which shards, under which key and for how long,
// which xorbs in which order within the bounds.
#include "daemon/answers/global_dedup_plan.hpp"

#include <gtest/gtest.h>

#include "answers_test_support.hpp"

namespace dedupd::daemon::answers {
namespace {

using shard::Hash;
using shard::Key;
namespace st = shard::testing;
using testing::kNow;

constexpr std::uint64_t kLifetime = 7 * 24 * 3600;

Key key_of(std::uint64_t seed) { return st::seeded_hash(1000 + seed); }

ReplySettings settings(const Key& key, ReplyBounds bounds = {}) { return {key, kNow, kLifetime, bounds}; }

TEST(GlobalDedupPlan, XorbOrderStartsAtTheChunksXorbAndWraps) {
  EXPECT_EQ(xorb_order(5, 2), (std::vector<std::size_t>{2, 3, 4, 0, 1}));
  EXPECT_EQ(xorb_order(3, 0), (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(xorb_order(3, 7), (std::vector<std::size_t>{0, 1, 2}));  // not found: shard order
  EXPECT_TRUE(xorb_order(0, 0).empty());
}

TEST(GlobalDedupPlan, KeyedShardsOfTheReplyKeyJoinOnlyWhenTheyDoNotShortenIt) {
  auto keyed = [](std::uint64_t seed, const Key& key, std::optional<std::uint64_t> expiry) {
    return SourceShard{{st::seeded_hash(seed), expiry, true, key}, st::seeded_hash(seed + 1)};
  };
  const Key k = key_of(20);
  std::vector<SourceShard> holders = {keyed(1, k, kNow + 100), keyed(3, k, kNow + 900), keyed(5, key_of(21), kNow + 50),
                                      keyed(7, k, std::nullopt)};
  auto plan = plan_reply(holders, settings(key_of(1)));
  ASSERT_TRUE(plan);
  EXPECT_FALSE(plan->rekey);
  EXPECT_EQ(plan->key, k);
  EXPECT_EQ(plan->expiry, kNow + kLifetime);  // the never-expiring one
  ASSERT_EQ(plan->sources.size(), 1u);
  EXPECT_EQ(plan->sources[0].shard.shard, st::seeded_hash(7));

  // Expiring alike (past the reply lifetime): all of the same key join.
  holders = {keyed(1, k, kNow + 2 * kLifetime), keyed(3, k, kNow + 3 * kLifetime), keyed(5, key_of(21), kNow + 50)};
  plan = plan_reply(holders, settings(key_of(1)));
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->sources.size(), 2u);
  EXPECT_EQ(plan->sources[0].shard.shard, st::seeded_hash(3));  // stays in the index longest
  EXPECT_FALSE(plan_reply({}, settings(key_of(1))).has_value());
}

TEST(GlobalDedupPlan, ARawShardWinsOverKeyedOnesAndIsRekeyedForTheWholeLifetime) {
  const Key k = key_of(30);
  std::vector<SourceShard> holders = {
      {{st::seeded_hash(1), std::nullopt, true, k}, st::seeded_hash(2)},
      {{st::seeded_hash(3), kNow + 10, false, {}}, st::seeded_hash(4)},
      {{st::seeded_hash(5), std::nullopt, false, {}}, st::seeded_hash(6)},
      {{st::seeded_hash(5), std::nullopt, false, {}}, st::seeded_hash(7)},  // the same shard again
  };
  auto plan = plan_reply(holders, settings(key_of(1)));
  ASSERT_TRUE(plan);
  EXPECT_TRUE(plan->rekey);
  EXPECT_EQ(plan->key, key_of(1)) << "the daemon's key";
  EXPECT_EQ(plan->expiry, kNow + kLifetime) << "a raw shard's expiry does not bound the reply";
  ASSERT_EQ(plan->sources.size(), 2u) << "the raw ones, each shard once; not the keyed one";
  EXPECT_EQ(plan->sources[0].shard.shard, st::seeded_hash(5)) << "never expires: stays in the index longest";
  EXPECT_EQ(plan->sources[0].xorb, st::seeded_hash(6));
  EXPECT_EQ(plan->sources[1].shard.shard, st::seeded_hash(3));
}

TEST(GlobalDedupPlan, AFleetSourceIsPlannedAsALocalOneWould) {
  fleet::ShardXorbs raw{st::seeded_hash(8), std::nullopt, kNow + 5, {}};
  ReplyPlan plan = plan_fleet_reply(raw, settings(key_of(2)));
  EXPECT_TRUE(plan.rekey);
  EXPECT_EQ(plan.key, key_of(2));
  EXPECT_EQ(plan.expiry, kNow + kLifetime);

  fleet::ShardXorbs keyed{st::seeded_hash(9), key_of(3), kNow + 60, {}};
  plan = plan_fleet_reply(keyed, settings(key_of(2)));
  EXPECT_FALSE(plan.rekey);
  EXPECT_EQ(plan.key, key_of(3)) << "served under its own key";
  EXPECT_EQ(plan.expiry, kNow + 60) << "for no longer than it lives";
  keyed.expiry = std::nullopt;
  EXPECT_EQ(plan_fleet_reply(keyed, settings(key_of(2))).expiry, kNow + kLifetime);
}

std::vector<index::Index::XorbHead> heads(std::initializer_list<std::pair<std::uint64_t, std::uint64_t>> seed_chunks) {
  std::vector<index::Index::XorbHead> out;
  for (auto [seed, chunks] : seed_chunks) out.push_back({st::seeded_hash(seed), std::uint32_t(chunks)});
  return out;
}

TEST(GlobalDedupPlan, TheChunksOwnXorbGoesInWhateverTheBoundsThenThoseAfterItThenBefore) {
  auto shard = heads({{1, 10}, {2, 10}, {3, 10}, {4, 10}});
  XorbChoice all(ReplyBounds{});
  EXPECT_EQ(all.choose(shard, st::seeded_hash(3)), (std::vector<std::size_t>{2, 3, 0, 1}));
  EXPECT_FALSE(all.full());

  XorbChoice none_left({.max_xorbs = 0, .max_bytes = 0});
  EXPECT_EQ(none_left.choose(shard, st::seeded_hash(2)), (std::vector<std::size_t>{1})) << "the answer itself";
  EXPECT_TRUE(none_left.full());

  XorbChoice two_blocks({.max_xorbs = 100, .max_bytes = kReplyFramingBytes + 2 * xorb_block_bytes(10)});
  EXPECT_EQ(two_blocks.choose(shard, st::seeded_hash(4)), (std::vector<std::size_t>{3, 0}));
  EXPECT_TRUE(two_blocks.full());
}

TEST(GlobalDedupPlan, AXorbTwoSourcesShareGoesInOnce) {
  XorbChoice choice(ReplyBounds{});
  EXPECT_EQ(choice.choose(heads({{1, 4}, {2, 4}}), st::seeded_hash(1)), (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(choice.choose(heads({{2, 4}, {3, 4}}), st::seeded_hash(3)), (std::vector<std::size_t>{1}));
}

TEST(GlobalDedupPlan, AFleetSourceBringsWhatFitsTheReplyAndCrossesTheNetworkInTime) {
  ReplyBounds small{.max_xorbs = 3, .max_bytes = kReplyFramingBytes + 1000};
  EXPECT_EQ(fleet_source_bounds(small).max_xorbs, 3u);
  EXPECT_EQ(fleet_source_bounds(small).max_block_bytes, 1000u);
  EXPECT_EQ(fleet_source_bounds({.max_xorbs = 3, .max_bytes = 10}).max_block_bytes, 0u) << "not even the framing";
  EXPECT_EQ(fleet_source_bounds(ReplyBounds{}).max_block_bytes, kFleetReplyMaxBlockBytes);
}

}  // namespace
}  // namespace dedupd::daemon::answers
