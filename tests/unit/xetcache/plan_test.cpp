// The consolidation plan on descriptions alone.
#include <gtest/gtest.h>

#include <set>

#include "cache_support.hpp"
#include "test_support.hpp"
#include "xetcache/plan.hpp"

namespace dedupd::xetcache {
namespace {

using testing::desc;
using testing::kDay;
using testing::kNow;

// Expiries in the middle of UTC days, so +/- a few hours stays in the day.
constexpr std::uint64_t kDay10 = (kNow / kDay + 10) * kDay + kDay / 2;

ConsolidationPolicy few(std::size_t min_small = 2) {
  ConsolidationPolicy p;
  p.min_small_shards = min_small;
  return p;
}

std::set<std::size_t> members_of(const MergeGroup& g) { return {g.members.begin(), g.members.end()}; }

TEST(Plan, NothingUntilTheCacheHoldsEnoughSmallShards) {
  std::vector<ShardDesc> s;
  for (int i = 0; i < 31; ++i) s.push_back(desc("s" + std::to_string(i), 100'000, 1000, kDay10));
  EXPECT_TRUE(plan_consolidation(s, ConsolidationPolicy{}, kNow).empty());
  s.push_back(desc("s31", 100'000, 1000, kDay10));
  auto plan = plan_consolidation(s, ConsolidationPolicy{}, kNow);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].members.size(), 32u);
}

TEST(Plan, KeyedShardsMergeOnlyWithTheirOwnKey) {
  shard::Key k1 = shard::testing::seeded_hash(1), k2 = shard::testing::seeded_hash(2);
  std::vector<ShardDesc> s{
      desc("a", 1000, 10, kDay10, k1, ShardKind::keyed),
      desc("b", 1000, 10, kDay10, k2, ShardKind::keyed),
      desc("c", 1000, 10, kDay10, k1, ShardKind::keyed),
      desc("d", 1000, 10, kDay10, k2, ShardKind::keyed),
      desc("e", 1000, 10, kDay10),
      desc("f", 1000, 10, kDay10),
  };
  auto plan = plan_consolidation(s, few(), kNow);
  ASSERT_EQ(plan.size(), 3u);
  std::set<std::set<std::size_t>> groups;
  for (const auto& g : plan) {
    groups.insert(members_of(g));
    for (std::size_t i : g.members) {
      EXPECT_EQ(s[i].key, g.key);
      EXPECT_EQ(s[i].kind, g.kind);
    }
  }
  EXPECT_EQ(groups, (std::set<std::set<std::size_t>>{{0, 2}, {1, 3}, {4, 5}}));
}

TEST(Plan, UnkeyedKindsStayApart) {
  std::vector<ShardDesc> s{
      desc("v1", 1000, 10, kDay10, {}, ShardKind::verified), desc("p1", 1000, 10, kDay10, {}, ShardKind::plain),
      desc("v2", 1000, 10, kDay10, {}, ShardKind::verified), desc("p2", 1000, 10, kDay10, {}, ShardKind::plain)};
  auto plan = plan_consolidation(s, few(), kNow);
  ASSERT_EQ(plan.size(), 2u);
  for (const auto& g : plan) EXPECT_EQ(s[g.members[0]].kind, s[g.members[1]].kind);
}

TEST(Plan, GroupsByExpiryDayAndCarriesTheEarliestExpiry) {
  std::vector<ShardDesc> s{
      desc("a", 1000, 10, kDay10 + 3600),     desc("b", 1000, 10, kDay10 - 7200),      // day 10
      desc("c", 1000, 10, kDay10 + kDay),     desc("d", 1000, 10, kDay10 + kDay + 5),  // day 11
      desc("e", 1000, 10, kDay10 + 2 * kDay),                                          // day 12 alone
      desc("n1", 1000, 10, shard::kNoExpiry), desc("n2", 1000, 10, shard::kNoExpiry),
  };
  auto plan = plan_consolidation(s, few(), kNow);
  ASSERT_EQ(plan.size(), 3u);
  std::set<std::set<std::size_t>> groups;
  for (const auto& g : plan) {
    groups.insert(members_of(g));
    std::uint64_t earliest = shard::kNoExpiry;
    for (std::size_t i : g.members) earliest = std::min(earliest, s[i].expiry);
    EXPECT_EQ(g.expiry, earliest);
    for (std::size_t i : g.members) EXPECT_LE(g.expiry, s[i].expiry);  // nothing outlives its source
  }
  EXPECT_EQ(groups, (std::set<std::set<std::size_t>>{{0, 1}, {2, 3}, {5, 6}}));
  for (const auto& g : plan)
    if (members_of(g) == std::set<std::size_t>{0, 1}) {
      EXPECT_EQ(g.expiry, kDay10 - 7200);
    }
}

TEST(Plan, GroupsStayWithinTheTargetSize) {
  ConsolidationPolicy p = few();
  p.target_size = 10'000;
  p.small_shard_bytes = 5'000;
  std::vector<ShardDesc> s;
  for (int i = 0; i < 7; ++i) {
    s.push_back(desc("s" + std::to_string(i), 3'000, 10, kDay10));
    s.back().creation = 100 + i;
  }
  auto plan = plan_consolidation(s, p, kNow);
  // 344 + n * 2656 <= 10000: three members a group; the seventh is left alone.
  ASSERT_EQ(plan.size(), 2u);
  for (const auto& g : plan) {
    EXPECT_EQ(g.members.size(), 3u);
    EXPECT_LE(g.max_bytes, p.target_size);
    EXPECT_EQ(g.max_bytes, merged_size_bound(s, g.members));
  }
  EXPECT_EQ(plan[0].members, (std::vector<std::size_t>{0, 1, 2}));  // oldest first
  EXPECT_EQ(plan[1].members, (std::vector<std::size_t>{3, 4, 5}));
}

TEST(Plan, DefaultTargetIsXetCores64MiB) {
  EXPECT_EQ(ConsolidationPolicy{}.target_size, 64u * 1024 * 1024);
  EXPECT_EQ(ConsolidationPolicy{}.small_shard_bytes, 16u * 1024 * 1024);
}

// Under a small entry cap (the local Xet endpoint's 1 Mi) a merged shard is
// an eighth of what the cap holds, so eviction can take the oldest content
// a file at a time; under the client's own cap it stays 64 MiB.
TEST(Plan, TheTargetShrinksWithASmallEntryCap) {
  const ConsolidationPolicy base{};
  const auto client_cap = policy_for_cap(base, 64ull << 20);
  EXPECT_EQ(client_cap.target_size, 64u << 20);
  EXPECT_EQ(client_cap.small_shard_bytes, 16u << 20);
  const auto small = policy_for_cap(base, 1u << 20);
  EXPECT_EQ(small.target_size, 8u << 20);
  EXPECT_EQ(small.small_shard_bytes, 2u << 20);
  EXPECT_EQ(policy_for_cap(base, 1000).target_size, 1u << 20) << "never under 1 MiB";
  EXPECT_EQ(policy_for_cap(base, UINT64_MAX).target_size, 64u << 20);
  // What it does to a plan: 40 shards of 1 MiB merge into 8 MiB groups.
  std::vector<ShardDesc> s;
  for (int i = 0; i < 40; ++i) s.push_back(desc("s" + std::to_string(i), 1u << 20, 16'000, kDay10));
  for (const auto& g : plan_consolidation(s, small, kNow)) EXPECT_LE(g.max_bytes, 8u << 20);
  EXPECT_EQ(plan_consolidation(s, client_cap, kNow).size(), 1u);
}

// Under a cap so small that the 1 MiB floor holds all of it (the soak test's
// 120 entries), bytes alone let one merge gather every small shard: a file
// near or past the cap that eviction takes whole, the newest content with
// it. The group's entries stay within an eighth of the cap instead.
TEST(Plan, UnderATinyEntryCapAGroupHoldsAnEighthOfIt) {
  const auto tiny = policy_for_cap(ConsolidationPolicy{}, 120);
  EXPECT_EQ(tiny.target_size, 1u << 20);
  EXPECT_EQ(tiny.max_group_chunk_entries, 15u);
  EXPECT_EQ(policy_for_cap(ConsolidationPolicy{}, 1u << 20).max_group_chunk_entries, 1u << 17);
  std::vector<ShardDesc> s;
  for (int i = 0; i < 40; ++i) s.push_back(desc("s" + std::to_string(i), 3'000, 4, kDay10));
  const auto plan = plan_consolidation(s, tiny, kNow);
  std::size_t grouped = 0;
  for (const auto& g : plan) {
    EXPECT_LE(g.chunk_entries, 15u);
    EXPECT_GE(g.members.size(), 2u);
    grouped += g.members.size();
  }
  EXPECT_EQ(grouped, 39u) << "groups of three (12 entries), the last shard left alone";
  // Shards without chunk entries (a duplicate's file information) are bound
  // by bytes only.
  std::vector<ShardDesc> dups;
  for (int i = 0; i < 40; ++i) dups.push_back(desc("d" + std::to_string(i), 3'000, 0, kDay10));
  const auto dup_plan = plan_consolidation(dups, tiny, kNow);
  ASSERT_EQ(dup_plan.size(), 1u);
  EXPECT_EQ(dup_plan[0].members.size(), 40u);
}

TEST(Plan, LeavesLargeExpiredAndNearlyExpiredShardsAlone) {
  std::vector<ShardDesc> s{
      desc("big1", 20u << 20, 10, kDay10), desc("big2", 20u << 20, 10, kDay10), desc("gone1", 1000, 10, kNow - 1),
      desc("gone2", 1000, 10, kNow - 1),   desc("soon1", 1000, 10, kNow + 60),  desc("soon2", 1000, 10, kNow + 120),
      desc("zero1", 1000, 10, 0),          desc("zero2", 1000, 10, 0),  // 0 is past for the client
  };
  EXPECT_TRUE(plan_consolidation(s, few(), kNow).empty());
}

}  // namespace
}  // namespace dedupd::xetcache
