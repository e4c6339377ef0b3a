// Properties of the chunker and the hash helpers that hold for any input,
// beside the oracle's vectors.
#include <gtest/gtest.h>

#include <random>
#include <string_view>
#include <vector>

#include "chunk/chunker.hpp"
#include "chunk/constants.hpp"
#include "chunk/file_hash_builder.hpp"
#include "chunk/sha256.hpp"
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

TEST(FileHashBuilder, AgreesWithTheWholeListFormForEveryLength) {
  std::mt19937_64 rng(7);
  for (std::size_t n : {0, 1, 2, 3, 4, 5, 8, 9, 10, 11, 17, 80, 81, 82, 100, 729, 730, 1000, 4097}) {
    std::vector<shard::HashAndSize> leaves(n);
    FileHashBuilder b;
    for (auto& l : leaves) {
      for (auto& byte : l.hash.bytes) byte = std::uint8_t(rng());
      l.size = 1 + rng() % 131072;
      b.add(l.hash, l.size);
    }
    EXPECT_EQ(b.chunks(), n);
    EXPECT_EQ(b.finish(), shard::file_hash(leaves)) << n;
    EXPECT_EQ(b.chunks(), 0u);
  }
}

TEST(Sha256, KnownAnswers) {
  Sha256 s;
  const std::string_view abc = "abc";
  s.update(std::span(reinterpret_cast<const std::uint8_t*>(abc.data()), abc.size()));
  auto d = s.finish();
  ASSERT_TRUE(d);
  EXPECT_EQ(d->to_hex_bytes(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // Ready again after finish: the empty message.
  auto e = s.finish();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->to_hex_bytes(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

}  // namespace
}  // namespace dedupd::chunk
