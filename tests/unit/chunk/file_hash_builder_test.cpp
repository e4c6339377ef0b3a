// The Xet file hash built as chunks arrive (chunk/file_hash_builder): the
// whole-list form's answer for every length, and a builder ready again after
// each file.
#include "chunk/file_hash_builder.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "shard/keys.hpp"

namespace dedupd::chunk {
namespace {

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

TEST(FileHashBuilder, EmptyIsTheZeroHashAndFinishStartsAnotherFile) {
  FileHashBuilder b;
  EXPECT_TRUE(b.finish().is_zero());
  shard::Hash one;
  one.bytes.fill(0x11);
  b.add(one, 1000);
  const shard::Hash first = b.finish();
  const std::vector<shard::HashAndSize> leaves{{one, 1000}};
  EXPECT_EQ(first, shard::file_hash(leaves));
  EXPECT_FALSE(first.is_zero());
  // What was added before finish() is not part of the next file.
  b.add(one, 1000);
  EXPECT_EQ(b.finish(), first);
  // A chunk alone is the root of the tree whatever its size; with two, the
  // sizes are part of the hash: the same chunk hashes with another size are
  // another file.
  b.add(one, 1000);
  b.add(one, 1000);
  const shard::Hash two = b.finish();
  b.add(one, 1000);
  b.add(one, 1001);
  EXPECT_NE(b.finish(), two);
}

}  // namespace
}  // namespace dedupd::chunk
