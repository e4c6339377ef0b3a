// Eviction order and caps on descriptions alone.
#include <gtest/gtest.h>

#include "cache_support.hpp"
#include "xetcache/evict.hpp"

namespace dedupd::xetcache {
namespace {

using testing::desc;
using testing::kDay;
using testing::kNow;

constexpr std::uint64_t kNoon5 = (kNow / kDay + 5) * kDay + kDay / 2;

ShardDesc used(ShardDesc d, std::uint64_t last_used) {
  d.last_used = last_used;
  return d;
}

std::vector<std::string> paths(const std::vector<ShardDesc>& s, const std::vector<std::size_t>& order) {
  std::vector<std::string> out;
  for (std::size_t i : order) out.push_back(s[i].path);
  return out;
}

// Expired first (earliest expiry first), then by expiry day, then least
// recently used within a day, never-expiring last.
std::vector<ShardDesc> sample() {
  return {
      used(desc("never", 100, 10, shard::kNoExpiry), 1),     used(desc("day5-fresh", 100, 10, kNoon5 - 3600), 900),
      used(desc("expired-late", 100, 10, kNow - 10), 999),   used(desc("day6", 100, 10, kNoon5 + kDay), 1),
      used(desc("day5-stale", 100, 10, kNoon5 + 3600), 100), used(desc("expired-early", 100, 10, kNow - 1000), 999),
  };
}

TEST(Evict, OrderIsExpiredThenSoonestToExpireThenLeastRecentlyUsed) {
  auto s = sample();
  EXPECT_EQ(paths(s, eviction_order(s, EvictionPolicy{}, kNow)),
            (std::vector<std::string>{"expired-early", "expired-late", "day5-stale", "day5-fresh", "day6", "never"}));
}

TEST(Evict, ExactExpiryWhenGranularityIsZero) {
  auto s = sample();
  EvictionPolicy p;
  p.expiry_granularity_seconds = 0;
  EXPECT_EQ(paths(s, eviction_order(s, p, kNow)),
            (std::vector<std::string>{"expired-early", "expired-late", "day5-fresh", "day5-stale", "day6", "never"}));
}

TEST(Evict, NothingWhileBothCapsHold) {
  auto s = sample();
  EvictionPolicy p;
  p.caps = {600, 60};
  auto plan = plan_eviction(s, p, kNow);
  EXPECT_TRUE(plan.evict.empty());
  EXPECT_EQ(plan.before.files, 6u);
  EXPECT_EQ(plan.after.bytes, 600u);
}

TEST(Evict, ByteCapEvictsInOrderUntilItHolds) {
  auto s = sample();
  EvictionPolicy p;
  p.caps = {350, 1000};
  auto plan = plan_eviction(s, p, kNow);
  EXPECT_EQ(paths(s, plan.evict), (std::vector<std::string>{"expired-early", "expired-late", "day5-stale"}));
  EXPECT_EQ(plan.after.bytes, 300u);
  EXPECT_EQ(plan.after.files, 3u);
  EXPECT_EQ(plan.after.chunk_entries, 30u);
}

TEST(Evict, ChunkEntryCapEvictsTooEvenUnderTheByteCap) {
  std::vector<ShardDesc> s{used(desc("small-many-entries", 100, 50, kNoon5), 1),
                           used(desc("later", 100, 20, kNoon5 + kDay), 1),
                           used(desc("latest", 100, 20, kNoon5 + 2 * kDay), 1)};
  EvictionPolicy p;
  p.caps = {1'000'000, 45};
  auto plan = plan_eviction(s, p, kNow);
  EXPECT_EQ(paths(s, plan.evict), (std::vector<std::string>{"small-many-entries"}));
  EXPECT_EQ(plan.after.chunk_entries, 40u);
}

TEST(Evict, ExpiredGoEvenUnderTheCapsWhenAsked) {
  auto s = sample();
  EvictionPolicy p;
  p.always_evict_expired = true;
  auto plan = plan_eviction(s, p, kNow);
  EXPECT_EQ(paths(s, plan.evict), (std::vector<std::string>{"expired-early", "expired-late"}));
}

TEST(Evict, DefaultCapsAreTheClientsOwn) {
  EXPECT_EQ(Caps{}.max_chunk_entries, 64u * 1024 * 1024);
  EXPECT_EQ(Caps{}.max_bytes, 16'000'000'000u);
}

}  // namespace
}  // namespace dedupd::xetcache
