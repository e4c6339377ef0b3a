// The chunker, chunk hashes and file hash against vectors made by xet-core's
// own chunker (chunk_vectors.hpp): every case fed as the oracle was fed, in
// one piece, and in random pieces.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "chunk/chunk_hasher.hpp"
#include "chunk/chunker.hpp"
#include "chunk_vectors.hpp"
#include "seeded_bytes.hpp"
#include "shard/keys.hpp"

namespace dedupd::chunk {
namespace {

using namespace testing;

TEST(ChunkVectors, CoverWhatTheyPromise) {
  // The vectors must hold the cases the tests below rely on.
  std::vector<std::string> names;
  bool large = false, empty = false;
  for (const auto& c : cases()) {
    names.push_back(c.name);
    large |= c.size > (128u << 20);
    empty |= c.size == 0 && c.chunks.empty();
  }
  EXPECT_TRUE(large);
  EXPECT_TRUE(empty);
  EXPECT_GE(cases().size(), 30u);
}

TEST(ChunkVectors, Regression2421AsXetCoreCutsIt) {
  // huggingface.js #2421: 52 chunks, chunk 44 a full 131,072 bytes.
  const auto& c = *std::find_if(cases().begin(), cases().end(),
                                [](const Case& k) { return k.name.starts_with("huggingface.js #2421"); });
  const auto o = run(c, {c.size});
  ASSERT_EQ(o.chunks.size(), 52u);
  EXPECT_EQ(o.chunks[44].size, 131072u);
  EXPECT_EQ(o.chunks[44].hash.to_string(), "8ee1833ff616a01e187888865c8e22f403c860b7a6c347ba28c4511995875086");
  for (std::size_t i = 0; i + 1 < o.chunks.size(); ++i) EXPECT_GE(o.chunks[i].size, 8192u) << i;
}

TEST(ChunkVectors, FedAsTheOracleWasFed) {
  for (const auto& c : cases()) {
    if (c.size > kInMemory) continue;
    expect_matches(c, run(c, oracle_pieces(c)), "oracle's pieces");
  }
}

TEST(ChunkVectors, InOnePiece) {
  for (const auto& c : cases()) {
    if (c.size > kInMemory) continue;
    expect_matches(c, run(c, {c.size}), "one piece");
    // The plain boundary finder agrees with the hasher.
    SeededBytes gen(c.gen);
    const auto bytes = gen.take(c.size);
    const auto lengths = chunk_lengths(bytes);
    ASSERT_EQ(lengths.size(), c.chunks.size()) << c.name;
    for (std::size_t i = 0; i < lengths.size(); ++i) EXPECT_EQ(lengths[i], c.chunks[i].first) << c.name << " " << i;
  }
}

TEST(ChunkVectors, InRandomPieces) {
  std::mt19937_64 rng(20260423);
  for (const auto& c : cases()) {
    if (c.size > kInMemory || c.size == 0) continue;
    for (int round = 0; round < 4; ++round) {
      // Mostly small pieces, sometimes large, sometimes empty.
      std::vector<std::uint64_t> pieces;
      std::uint64_t fed = 0;
      while (fed < c.size) {
        std::uint64_t n;
        switch (rng() % 4) {
          case 0:
            n = rng() % 3;
            break;
          case 1:
            n = rng() % 200;
            break;
          case 2:
            n = rng() % 20000;
            break;
          default:
            n = rng() % 300000;
            break;
        }
        n = std::min(n, c.size - fed);
        pieces.push_back(n);
        fed += n;
      }
      expect_matches(c, run(c, pieces), "random pieces, round " + std::to_string(round));
    }
  }
}

TEST(ChunkVectors, FileHashBuilderAgreesWithShardFileHash) {
  for (const auto& c : cases()) {
    std::vector<shard::HashAndSize> leaves;
    for (const auto& [size, hash] : c.chunks) leaves.push_back({*shard::Hash::parse(hash), size});
    EXPECT_EQ(shard::file_hash(leaves).to_string(), c.file_hash) << c.name;
  }
}

TEST(ChunkVectors, LargerThan128MiBStreamed) {
  for (const auto& c : cases()) {
    if (c.size <= kInMemory) continue;
    // Odd pieces, so blocks straddle boundaries differently from the oracle.
    std::vector<std::uint64_t> pieces;
    for (std::uint64_t fed = 0; fed < c.size;) {
      pieces.push_back(std::min<std::uint64_t>((1u << 20) + 4099, c.size - fed));
      fed += pieces.back();
    }
    expect_matches(c, run(c, pieces), "1 MiB + 4099 pieces");
  }
}

}  // namespace
}  // namespace dedupd::chunk
