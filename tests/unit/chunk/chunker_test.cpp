// Properties of the chunker that hold for any input, beside the oracle's
// vectors.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "chunk/chunker.hpp"
#include "chunk/constants.hpp"
#include "seeded_bytes.hpp"
#include "shard/keys.hpp"

namespace dedupd::chunk {
namespace {

TEST(Chunker, SizesStayWithinMinimumAndMaximum) {
  for (const char* kind : {"xorshift32", "mixed"}) {
    testing::Generator g;
    g.kind = kind;
    g.seed = 99;
    g.run = 3000;
    testing::SeededBytes gen(g);
    const auto bytes = gen.take(8 << 20);
    const auto lengths = chunk_lengths(bytes);
    ASSERT_GT(lengths.size(), 60u);
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < lengths.size(); ++i) {
      total += lengths[i];
      EXPECT_LE(lengths[i], kMaxChunkSize) << kind << " " << i;
      if (i + 1 < lengths.size()) {
        EXPECT_GE(lengths[i], kMinChunkSize) << kind << " " << i;
      }
    }
    EXPECT_EQ(total, bytes.size());
  }
}

TEST(Chunker, ConstantBytesCutAtTheMaximum) {
  std::vector<std::uint8_t> zeros(5 * kMaxChunkSize + 100);
  const auto lengths = chunk_lengths(zeros);
  ASSERT_EQ(lengths.size(), 6u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(lengths[i], kMaxChunkSize);
  EXPECT_EQ(lengths[5], 100u);
}

TEST(Chunker, PendingCountsTheChunkInProgress) {
  Chunker c;
  std::vector<std::uint8_t> zeros(1000);
  EXPECT_FALSE(c.next_boundary(zeros));
  EXPECT_EQ(c.pending(), 1000u);
  EXPECT_FALSE(c.next_boundary({}));
  EXPECT_EQ(c.finish(), 1000u);
  EXPECT_EQ(c.pending(), 0u);
  EXPECT_EQ(c.finish(), 0u);
}

TEST(Chunker, BoundaryIsReportedInsideThePiece) {
  Chunker c;
  std::vector<std::uint8_t> zeros(kMaxChunkSize - 10);
  EXPECT_FALSE(c.next_boundary(zeros));
  std::vector<std::uint8_t> more(50);
  auto b = c.next_boundary(more);
  ASSERT_TRUE(b);
  EXPECT_EQ(*b, 10u);
  EXPECT_EQ(c.pending(), 0u);
}

}  // namespace
}  // namespace dedupd::chunk
