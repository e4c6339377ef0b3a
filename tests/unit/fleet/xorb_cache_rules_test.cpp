// The xorb cache's own rules, without a server (fleet/xorb_cache.hpp): eras
// keep databases apart and end with clear(), the budget holds, hits add up
// across lookups, and earlier hits count less while blocks leave before
// they paid for themselves, and fully again once they stay.
#include <gtest/gtest.h>

#include "fleet/xorb_cache.hpp"

namespace dedupd::fleet {
namespace {

CachedXorb with_block(std::size_t bytes) {
  CachedXorb x;
  x.chunks = std::int32_t(bytes / 48) - 1;
  x.block = std::make_shared<const std::vector<std::uint8_t>>(bytes, std::uint8_t(7));
  return x;
}

TEST(XorbCacheRules, ErasKeepDatabasesApartAndClearEndsThem) {
  XorbCache cache(1 << 20);
  const auto a = cache.era("start.1.2.3"), b = cache.era("start.4.5.6");
  EXPECT_NE(a, b);
  EXPECT_EQ(cache.era("start.1.2.3"), a);
  cache.put(a, 7, CachedXorb{}, 1);
  EXPECT_TRUE(cache.find(a, 7, 0).x);
  EXPECT_FALSE(cache.find(b, 7, 0).x) << "row 7 of another database";

  cache.clear();
  EXPECT_EQ(cache.size(), 0u);
  cache.put(a, 8, CachedXorb{}, 1);
  EXPECT_EQ(cache.size(), 0u) << "kept under an era that clear() ended";
  const auto again = cache.era("start.1.2.3");
  EXPECT_NE(again, a);
  cache.put(again, 8, CachedXorb{}, 1);
  EXPECT_TRUE(cache.find(again, 8, 0).x);
}

TEST(XorbCacheRules, TheBudgetHoldsAndTheLeastRecentlyUsedGoes) {
  const std::int64_t budget = 3 * XorbCache::cost(with_block(9648));
  XorbCache cache(budget);
  const auto era = cache.era("e");
  for (std::int32_t id = 1; id <= 3; ++id) cache.put(era, id, with_block(9648), 0);
  EXPECT_EQ(cache.size(), 3u);
  ASSERT_TRUE(cache.find(era, 1, 0).x);  // 2 is now the least recently used
  cache.put(era, 4, with_block(9648), 0);
  EXPECT_LE(cache.bytes(), budget);
  EXPECT_FALSE(cache.find(era, 2, 0).x);
  EXPECT_TRUE(cache.find(era, 1, 0).x);
  EXPECT_EQ(cache.evictions(), 1u);
  // A block larger than the whole budget is kept without it.
  cache.put(era, 5, with_block(std::size_t(budget) + 48), 0);
  auto five = cache.find(era, 5, 0);
  ASSERT_TRUE(five.x);
  EXPECT_FALSE(five.x->block);
  // Nothing at all with no budget.
  XorbCache none(0);
  const auto e = none.era("e");
  none.put(e, 1, CachedXorb{}, 1);
  EXPECT_EQ(none.size(), 0u);
}

TEST(XorbCacheRules, HitsAddUpOverLookups) {
  XorbCache cache(1 << 20);
  const auto era = cache.era("e");
  EXPECT_EQ(cache.find(era, 3, 2).hits, 2) << "not held: this lookup's hits alone";
  cache.put(era, 3, CachedXorb{}, 2);
  EXPECT_EQ(cache.find(era, 3, 1).hits, 3);
  EXPECT_EQ(cache.find(era, 3, 4).hits, 7);
  // Once its block came, the count starts again: it now says what the
  // block paid back.
  cache.put(era, 3, with_block(9648), 0);
  EXPECT_EQ(cache.find(era, 3, 1).hits, 1);
}

TEST(XorbCacheRules, EarlierHitsCountLessWhileBlocksLeaveUnpaidAndFullyOnceTheyStay) {
  // Room for two 9,648-byte blocks; each pays for itself after 3 hits.
  XorbCache cache(2 * XorbCache::cost(with_block(9648)) + XorbCache::cost(CachedXorb{}));
  const auto era = cache.era("e");
  EXPECT_EQ(cache.earlier_hit_weight(), 1.0);
  // Blocks that leave with no hit since they came: each leaves unpaid.
  for (std::int32_t id = 1; id <= 10; ++id) cache.put(era, id, with_block(9648), 0);
  EXPECT_EQ(cache.evictions(), 8u);
  EXPECT_NEAR(cache.earlier_hit_weight(), 0.25, 1e-9);  // 8 quarter steps
  cache.put(era, 20, CachedXorb{}, 0);
  EXPECT_EQ(cache.find(era, 20, 100).hits, 100) << "this lookup's hits count in full";
  EXPECT_EQ(cache.find(era, 20, 0).hits, 25) << "an earlier lookup's count a quarter";
  // Blocks that leave having paid back more than they cost.
  for (std::int32_t id = 30; id < 46; ++id) {
    cache.put(era, id, with_block(9648), 0);
    cache.find(era, id, 3);
  }
  EXPECT_EQ(cache.earlier_hit_weight(), 1.0);
}

}  // namespace
}  // namespace dedupd::fleet
