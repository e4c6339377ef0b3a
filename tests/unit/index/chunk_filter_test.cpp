// The in-memory chunk filter (index/chunk_filter): no false negatives, a
// bounded false positive rate, sizes within the memory bound, and commits
// covered only in order.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "index/chunk_filter.hpp"
#include "index/tuning.hpp"
#include "tests/unit/index/support.hpp"

namespace dedupd::index::gen {
namespace {

TEST(ChunkFilter, HoldsEverythingAddedAndRejectsMostOfTheRest) {
  constexpr std::uint64_t kEntries = 200'000;
  ChunkFilter f(kEntries);
  for (std::uint64_t i = 0; i < kEntries; ++i) f.add(hash_of_seed(i).data());
  EXPECT_EQ(f.added(), kEntries);
  EXPECT_FALSE(f.full());
  for (std::uint64_t i = 0; i < kEntries; ++i) ASSERT_TRUE(f.may_contain(hash_of_seed(i).data())) << i;
  std::uint64_t positives = 0;
  for (std::uint64_t i = 0; i < kEntries; ++i) positives += f.may_contain(hash_of_seed(kEntries + i).data());
  // About 1.3 % at kBitsPerEntry = 10 when full; 3 % leaves room, 0 would mean
  // the filter answers from something else than its bits.
  EXPECT_LT(positives, kEntries * 3 / 100);
  EXPECT_GT(positives, 0u);
  f.add(hash_of_seed(~0ull).data());
  EXPECT_TRUE(f.full());
  EXPECT_TRUE(f.outgrown());
}

// A filter of 2 MiB or more is mapped in whole huge pages and says so in
// its memory; a small one is not rounded up. Either answers from its bits.
TEST(ChunkFilter, ALargeOneTakesWholeHugePagesASmallOneItsBlocks) {
  constexpr std::size_t kHuge = std::size_t(2) << 20;
  ChunkFilter large(3'000'000);
  EXPECT_EQ(large.bytes() % kHuge, 0u);
  EXPECT_GE(large.bytes(), 3'000'000 * ChunkFilter::kBitsPerEntry / 8);
  EXPECT_LT(large.bytes(), 3'000'000 * ChunkFilter::kBitsPerEntry / 8 + kHuge);
  ChunkFilter small(1'000);
  EXPECT_LT(small.bytes(), 4096u);
  for (ChunkFilter* f : {&large, &small}) {
    for (std::uint64_t i = 0; i < 1'000; ++i) f->add(hash_of_seed(i).data());
    for (std::uint64_t i = 0; i < 1'000; ++i) ASSERT_TRUE(f->may_contain(hash_of_seed(i).data())) << i;
  }
  std::uint64_t positives = 0;
  for (std::uint64_t i = 0; i < 100'000; ++i) positives += large.may_contain(hash_of_seed(1'000 + i).data());
  EXPECT_LT(positives, 10u) << "1,000 entries in a filter for three million";
}

// What the header says of kBitsPerEntry, and what status and metrics
// report: the estimate follows what a filter really lets through, at its
// capacity and filled past it (as one at the memory bound is).
TEST(ChunkFilter, EstimatesTheShareOfAbsentFormsItLetsThrough) {
  constexpr std::uint64_t kCapacity = 100'000, kProbes = 200'000;
  for (std::uint64_t entries : {kCapacity * 10 / 12, kCapacity, kCapacity * 10 / 8, kCapacity * 4}) {
    ChunkFilter f(kCapacity);
    for (std::uint64_t i = 0; i < entries; ++i) f.add(hash_of_seed(i).data());
    std::uint64_t positives = 0;
    for (std::uint64_t i = 0; i < kProbes; ++i) positives += f.may_contain(hash_of_seed(entries + i).data());
    const double measured = double(positives) / kProbes, estimated = f.false_positive_rate();
    std::printf("%.1f bits an entry: %.2f %% of absent forms pass, %.2f %% estimated\n",
                double(f.bytes()) * 8 / double(entries), measured * 100, estimated * 100);
    EXPECT_GT(measured, estimated * 0.8) << entries;
    EXPECT_LT(measured, estimated * 1.25) << entries;
  }
  EXPECT_EQ(ChunkFilter(1000).false_positive_rate(), 0.0) << "nothing in it: nothing passes";
}

// The fingerprint is 4 bytes: at N entries about N / 2^32 of absent forms
// share one with a stored form, and no filter can tell them apart.
TEST(ChunkFilter, TheEstimateHasTheFingerprintsFloor) {
  ChunkFilter f(1u << 20);
  for (std::uint64_t i = 0; i < (1u << 20); ++i) f.add(hash_of_seed(i).data());
  const double floor = double(1u << 20) / 4294967296.0;
  EXPECT_GT(f.false_positive_rate(), floor);
}

TEST(ChunkFilter, OneSizedDownToTheBoundIsNeverOutgrown) {
  ChunkFilter f(1000, /*at_bound=*/true);
  for (std::uint64_t i = 0; i < 5000; ++i) f.add(hash_of_seed(i).data());
  EXPECT_TRUE(f.full());
  EXPECT_FALSE(f.outgrown()) << "a rebuild would get no more memory: it would only cost a read of the tables";
  for (std::uint64_t i = 0; i < 5000; ++i) ASSERT_TRUE(f.may_contain(hash_of_seed(i).data())) << i;
}

// The old filter stopped at 12 MiB (about 10 M entries); the sizes now
// follow the index up to the setting.
TEST(ChunkFilter, SizesFollowTheIndexUpToTheBound) {
  constexpr std::uint64_t kMiB = 1u << 20, kThreshold = 1u << 18;
  constexpr std::uint64_t kDefault = 512 * kMiB;
  auto bytes = [](const ChunkFilterSizes& s) {
    return ChunkFilter::mapped_bytes(s.all) + ChunkFilter::mapped_bytes(s.recent);
  };

  EXPECT_EQ(Options{}.filter_floor_entries, ChunkFilter::kFloorEntries);
  // A tiny index: the floor, not hundreds of MB.
  ChunkFilterSizes tiny = chunk_filter_sizes(2000, kThreshold, kDefault);
  EXPECT_EQ(tiny.all, ChunkFilter::kFloorEntries);
  EXPECT_FALSE(tiny.at_bound);
  EXPECT_LE(bytes(tiny), 3 * kMiB);

  for (std::uint64_t entries : {std::uint64_t(10'000'000), std::uint64_t(100'000'000), std::uint64_t(268'000'000)}) {
    ChunkFilterSizes s = chunk_filter_sizes(entries, kThreshold, kDefault);
    EXPECT_FALSE(s.at_bound) << entries;
    EXPECT_GE(s.all, entries + entries / 4) << entries;
    EXPECT_GE(s.recent, entries / 8) << "the recent table's share before a merge: " << entries;
    EXPECT_LE(bytes(s), kDefault);
  }
  // 268 M entries, about 10 bits each plus the recent table's: what the
  // default was chosen for.
  EXPECT_GT(ChunkFilter::capacity_in(kDefault), 268'000'000u * 5 / 4 + 268'000'000u / 8);

  // Past the bound both shrink, together within it, whole huge pages
  // included (what they map), and what the rounding leaves goes to the
  // recent table's.
  for (std::uint64_t bound : {kMiB, 3 * kMiB, 12 * kMiB, 64 * kMiB, 65 * kMiB}) {
    ChunkFilterSizes s = chunk_filter_sizes(100'000'000, kThreshold, bound);
    EXPECT_TRUE(s.at_bound) << bound;
    EXPECT_LE(bytes(s), bound) << bound;
    EXPECT_GE(bytes(s), bound - bound / 50) << "the bound is used: " << bound;
    EXPECT_GT(s.recent, 0u);
    EXPECT_LE(s.recent, s.all);
    ChunkFilter all(s.all), recent(s.recent);
    EXPECT_EQ(all.bytes() + recent.bytes(), bytes(s)) << "mapped_bytes() is what a filter maps";
  }
  // Within the bound before the rounding, past it after: sized down to it.
  constexpr std::uint64_t kEntries = 33'000'000, kBound = 55 * kMiB;
  const ChunkFilterSizes free = chunk_filter_sizes(kEntries, kThreshold, kDefault);
  ASSERT_LE(free.all + free.recent, ChunkFilter::capacity_in(kBound));
  ASSERT_GT(bytes(free), kBound);
  const ChunkFilterSizes s = chunk_filter_sizes(kEntries, kThreshold, kBound);
  EXPECT_TRUE(s.at_bound);
  EXPECT_LE(bytes(s), kBound);
}

TEST(ChunkFilter, CoversCommitsOnlyInOrderAndOnlyOncePublished) {
  ChunkFilter f(1000);
  f.expect_after(10);
  EXPECT_EQ(f.covered(), 0u) << "not in service before publish()";
  f.committed(11);
  EXPECT_EQ(f.covered(), 0u);
  ASSERT_TRUE(f.publish());
  EXPECT_EQ(f.covered(), 11u);
  f.committed(12);
  EXPECT_EQ(f.covered(), 12u);
  f.committed(14);  // 13 was somebody else's
  EXPECT_TRUE(f.broken());
  EXPECT_EQ(f.covered(), 0u);
  f.committed(15);
  EXPECT_EQ(f.covered(), 0u) << "once broken, never trusted again";
}

}  // namespace
}  // namespace dedupd::index::gen
