// The chunk table's partitions (fleet/partitions.hpp): the bounds the
// migrations create the table with are the ones partition_of routes by, so
// every prefix is probed in the partition that holds it.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "fleet/partitions.hpp"

namespace dedupd::fleet::schema {
namespace {

TEST(Partitions, TheFirstAndTheLastAreOpenEnded) {
  EXPECT_EQ(partition_lower(0), "MINVALUE");
  EXPECT_EQ(partition_upper(kChunkPartitions - 1), "MAXVALUE");
  EXPECT_EQ(partition_of(std::numeric_limits<std::int64_t>::min()), 0);
  EXPECT_EQ(partition_of(std::numeric_limits<std::int64_t>::max()), kChunkPartitions - 1);
}

TEST(Partitions, EachLowerBoundIsWherePartitionOfStartsItsRange) {
  for (int i = 1; i < kChunkPartitions; ++i) {
    const std::int64_t lower = std::stoll(partition_lower(i));
    EXPECT_EQ(partition_of(lower), i) << i;
    EXPECT_EQ(partition_of(lower - 1), i - 1) << i;
    EXPECT_EQ(partition_upper(i - 1), partition_lower(i)) << i;
  }
}

TEST(Partitions, TheRangesAreEqual) {
  for (int i = 2; i < kChunkPartitions; ++i)
    EXPECT_EQ(std::stoll(partition_lower(i)) - std::stoll(partition_lower(i - 1)), std::int64_t(1) << 60) << i;
}

}  // namespace
}  // namespace dedupd::fleet::schema
