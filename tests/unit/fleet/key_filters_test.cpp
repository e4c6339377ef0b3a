// The set of key filters (fleet/key_filters) without a server: how a filter
// is sized, what a restart hands back and what the set takes in, its budget,
// and which keys it keeps. Stepping a key against the fleet's tables is in
// reader_filter_test.cpp, with PostgreSQL.
#include "fleet/key_filters.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tests/unit/fleet/kept_of.hpp"

namespace dedupd::fleet {
namespace {

TEST(KeptFiltersFile, AdoptTakesOnlyWhatItCanVouchFor) {
  KeyFilters set(64 << 20);
  auto k = kept_of(shard::Key{}, 1, 100);
  auto unsorted = k;
  std::reverse(unsorted.xorbs.begin(), unsorted.xorbs.end());
  EXPECT_FALSE(set.adopt(unsorted)) << "xorbs out of order: the listing's search would miss some";
  EXPECT_TRUE(set.adopt(k));
  EXPECT_FALSE(set.adopt(kept_of(shard::Key{}, 2, 100))) << "the key has a filter already";
  EXPECT_EQ(set.kept().size(), 1u);
  const auto v = set.kept_state();
  EXPECT_EQ(v.filters, 1u);
  EXPECT_TRUE(set.adopt(kept_of(index::gen::hash_of_seed(3), 3, 100)));
  EXPECT_GT(set.kept_state().version, v.version);
}

TEST(KeyFilters, ARoomHalfAsLargeAgainAtLeastTheMinimumGrowth) {
  EXPECT_EQ(KeyFilters::room_for(0), KeyFilters::kMinGrowth);
  EXPECT_EQ(KeyFilters::room_for(1000), 1000 + KeyFilters::kMinGrowth);
  EXPECT_EQ(KeyFilters::room_for(2 * KeyFilters::kMinGrowth), 3 * KeyFilters::kMinGrowth);
  EXPECT_EQ(KeyFilters::room_for(1'000'000), 1'500'000u);
}

TEST(KeyFilters, AnAdoptedFilterIsKeptButNotUsedBeforeItsKeyIsListed) {
  KeyFilters set(64 << 20);
  const shard::Key key = index::gen::hash_of_seed(11);
  auto k = kept_of(key, 11, 1000);
  const auto filter = k.filter;
  const auto xorbs = k.xorbs;
  ASSERT_TRUE(set.adopt(std::move(k)));
  // No generation is known for it yet, in any epoch.
  EXPECT_EQ(set.usable(key, "", ""), nullptr);
  EXPECT_EQ(set.usable(key, "1234", "epoch"), nullptr);
  EXPECT_FALSE(set.over_budget(key, "1234", "epoch"));
  auto kept = set.kept();
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].key, key);
  EXPECT_EQ(kept[0].filter, filter);
  EXPECT_EQ(kept[0].xorbs, xorbs);
  const auto s = set.summary();
  EXPECT_EQ(s.complete, 0u);
  EXPECT_EQ(s.entries, 0u);
  EXPECT_EQ(s.thinnest_bits, 0);
  EXPECT_EQ(s.raw_bits, 0);
  EXPECT_EQ(set.entries_fetched(), 0u);
}

TEST(KeyFilters, WhatIsAdoptedIsTakenFromTheBudget) {
  const std::int64_t budget = 64 << 20;
  KeyFilters set(budget);
  EXPECT_EQ(set.budget(), budget);
  EXPECT_EQ(set.budget_left(), budget);
  auto raw = kept_of(shard::Key{}, 1, 100000);
  auto keyed = kept_of(index::gen::hash_of_seed(2), 2, 1000);
  const auto raw_bytes = std::int64_t(raw.filter->bytes()), keyed_bytes = std::int64_t(keyed.filter->bytes());
  ASSERT_TRUE(set.adopt(std::move(raw)));
  ASSERT_TRUE(set.adopt(std::move(keyed)));
  EXPECT_EQ(set.budget_left(), budget - raw_bytes - keyed_bytes);
  const auto s = set.summary();
  EXPECT_EQ(s.bytes, raw_bytes + keyed_bytes);
  EXPECT_EQ(s.raw_bytes, raw_bytes);
  EXPECT_FALSE(s.raw_over_budget);
  EXPECT_EQ(s.over_budget, 0u);
}

TEST(KeyFilters, TheRawFilterTakesAtMostHalfAndNoFilterPassesTheBudget) {
  auto raw = kept_of(shard::Key{}, 1, 100000);
  const auto raw_bytes = std::int64_t(raw.filter->bytes());
  KeyFilters set(2 * raw_bytes - 1);
  EXPECT_FALSE(set.adopt(raw)) << "over half the budget";
  EXPECT_EQ(set.budget_left(), set.budget());
  // A keyed filter may take more than half, but no more than is left.
  const shard::Key key = index::gen::hash_of_seed(3);
  auto big = kept_of(key, 3, 100000);
  ASSERT_TRUE(set.adopt(big));
  EXPECT_FALSE(set.adopt(kept_of(index::gen::hash_of_seed(4), 4, 100000)));
  EXPECT_EQ(set.kept().size(), 1u);
  // A filter refused for its size leaves no trace: a smaller one of that
  // key is taken.
  EXPECT_TRUE(set.adopt(kept_of(index::gen::hash_of_seed(4), 4, 1000)));
  EXPECT_EQ(set.kept().size(), 2u);
  EXPECT_FALSE(set.adopt(KeyFilters::Kept{index::gen::hash_of_seed(5), nullptr, {}})) << "no filter";
}

TEST(KeyFilters, OnlyTheLiveKeysAreKeptAndTheRestGiveTheirBytesBack) {
  KeyFilters set(64 << 20);
  const shard::Key a = index::gen::hash_of_seed(21), b = index::gen::hash_of_seed(22);
  ASSERT_TRUE(set.adopt(kept_of(a, 21, 1000)));
  ASSERT_TRUE(set.adopt(kept_of(b, 22, 1000)));
  ASSERT_TRUE(set.adopt(kept_of(shard::Key{}, 23, 1000)));
  const auto before = set.kept_state();
  EXPECT_EQ(before.filters, 3u);
  const std::int64_t left = set.budget_left();
  std::int64_t b_bytes = 0;
  for (const auto& k : set.kept())
    if (k.key == b) b_bytes = std::int64_t(k.filter->bytes());
  ASSERT_GT(b_bytes, 0);
  set.keep_only_live({detail::LiveKey{0, shard::Key{}, "7"}, detail::LiveKey{5, a, "9"}});
  const auto after = set.kept_state();
  EXPECT_EQ(after.filters, 2u);
  EXPECT_GT(after.version, before.version);
  EXPECT_EQ(set.budget_left(), left + b_bytes);
  for (const auto& k : set.kept()) EXPECT_NE(k.key, b);
  // Nothing to drop: nothing moves.
  set.keep_only_live({detail::LiveKey{0, shard::Key{}, "7"}, detail::LiveKey{5, a, "9"}});
  EXPECT_EQ(set.kept_state().version, after.version);
  set.keep_only_live({});
  EXPECT_EQ(set.kept_state().filters, 0u);
  EXPECT_EQ(set.budget_left(), set.budget());
}

}  // namespace
}  // namespace dedupd::fleet
