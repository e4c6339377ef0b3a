#include "daemon/expiry/policy.hpp"

#include <gtest/gtest.h>

namespace dedupd::daemon::expiry {
namespace {

using namespace std::chrono_literals;

shard::Hash h(std::uint8_t b) {
  shard::Hash x;
  x.bytes.fill(b);
  return x;
}

ShardRecord expired(std::uint8_t id, std::uint64_t expiry, std::vector<std::string> paths) {
  return ShardRecord{h(id), false, expiry, expiry - 100, std::move(paths)};
}

constexpr std::uint64_t kT = 1'754'664'705;  // the fixture's expiry

TEST(ExpiryPolicy, FileGoesWhenTheGraceEnds) {
  std::vector<ShardRecord> shards{expired(1, kT, {"/w/a.mdb"})};
  EXPECT_TRUE(files_past_grace(shards, kT + 7 * 86400 - 1, 7 * 24h).empty());
  auto due = files_past_grace(shards, kT + 7 * 86400, 7 * 24h);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].path, "/w/a.mdb");
  EXPECT_EQ(due[0].shard, h(1));
}

TEST(ExpiryPolicy, ZeroGraceDeletesAtExpiry) {
  std::vector<ShardRecord> shards{expired(1, kT, {"/w/a.mdb", "/w/copy/a.mdb"})};
  EXPECT_EQ(files_past_grace(shards, kT, 0s).size(), 2u);
}

TEST(ExpiryPolicy, NeverKeepsFiles) {
  std::vector<ShardRecord> shards{expired(1, kT, {"/w/a.mdb"})};
  EXPECT_TRUE(files_past_grace(shards, kT + 1000 * 86400, std::nullopt).empty());
  EXPECT_FALSE(next_deletion(shards, kT, std::nullopt));
}

TEST(ExpiryPolicy, LiveAndNeverExpiringShardsKeepTheirFiles) {
  ShardRecord live{h(1), true, kT, 0, {"/w/live.mdb"}};
  ShardRecord forever{h(2), false, std::nullopt, 0, {"/w/forever.mdb"}};
  EXPECT_TRUE(files_past_grace({live, forever}, kT + 10 * 86400, 0s).empty());
}

TEST(ExpiryPolicy, NextDeletionIsTheEarliestFutureGraceEnd) {
  std::vector<ShardRecord> shards{expired(1, kT + 50, {"/w/a.mdb"}), expired(2, kT + 10, {"/w/b.mdb"}),
                                  expired(3, kT - 5000, {"/w/old.mdb"}), expired(4, kT + 1, {})};
  EXPECT_EQ(next_deletion(shards, kT, 3600s), std::optional<std::uint64_t>(kT + 10 + 3600));
  // Already due ones are the current pass's business, not the next wake's.
  EXPECT_EQ(next_deletion(shards, kT + 10 + 3600, 3600s), std::optional<std::uint64_t>(kT + 50 + 3600));
}

TEST(ExpiryPolicy, CapEvictsOldestFirstUntilUnder) {
  std::vector<ShardBytes> shards{
      {h(1), 300, kT, 100}, {h(2), 100, kT, 100}, {h(3), 200, kT, 100}, {h(4), 50, std::nullopt, 1000}};
  // Expiring total 300; cap 150 -> drop the two oldest expiring ones.
  auto out = evictions_for_cap(shards, 150);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], h(2));
  EXPECT_EQ(out[1], h(3));
  EXPECT_TRUE(evictions_for_cap(shards, 300).empty());
  EXPECT_EQ(evictions_for_cap(shards, 0).size(), 3u);  // never the non-expiring one
}

TEST(ExpiryPolicy, CapTiesBreakByExpiryThenHash) {
  std::vector<ShardBytes> shards{{h(9), 100, kT + 5, 10}, {h(8), 100, kT + 5, 10}, {h(7), 100, kT + 9, 10}};
  auto out = evictions_for_cap(shards, 10);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], h(8));
  EXPECT_EQ(out[1], h(9));
}

TEST(ExpiryPolicy, CapSkipsShardsWithNothingOnDisk) {
  std::vector<ShardBytes> shards{{h(1), 1, kT, 0}, {h(2), 2, kT, 500}};
  auto out = evictions_for_cap(shards, 100);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], h(2));
}

TEST(ExpiryPolicy, NextWakeIsTheEarliestMomentBoundedByTheTick) {
  EXPECT_EQ(next_wake(1000, {std::nullopt, std::nullopt}, 300s), 1300u);
  EXPECT_EQ(next_wake(1000, {1010, std::nullopt, 2000}, 300s), 1010u);
  EXPECT_EQ(next_wake(1000, {5000, 1200}, 300s), 1200u);
  EXPECT_EQ(next_wake(1000, {900}, 300s), 1000u);  // overdue: now
}

TEST(ExpiryPolicy, DelayReachesTheStartOfTheSecond) {
  EXPECT_EQ(delay_until(kT, kT * 1000 - 250), 250ms);
  EXPECT_EQ(delay_until(kT, kT * 1000), 0ms);
  EXPECT_EQ(delay_until(kT, kT * 1000 + 999), 0ms);
  EXPECT_EQ(delay_until(kT + 60, kT * 1000), 60000ms);
}

}  // namespace
}  // namespace dedupd::daemon::expiry
