// The chunker, chunk hashes, file hash and sha256 against vectors made by
// xet-core's own chunker (vectors.json, from make_vectors.mjs): every case
// fed as the oracle was fed, in one piece, and in random pieces.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "chunk/chunk_hasher.hpp"
#include "chunk/chunker.hpp"
#include "chunk/file_digest.hpp"
#include "seeded_bytes.hpp"
#include "shard/keys.hpp"

namespace dedupd::chunk {
namespace {

using testing::Generator;
using testing::SeededBytes;

struct Case {
  std::string name;
  Generator gen;
  std::uint64_t size = 0;
  std::vector<std::uint64_t> feeds;
  std::uint64_t rest_piece = 0;
  std::string file_hash, sha256;
  std::vector<std::pair<std::uint64_t, std::string>> chunks;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = [] {
    std::ifstream f(DEDUPD_CHUNK_VECTORS);
    EXPECT_TRUE(f) << DEDUPD_CHUNK_VECTORS;
    const auto doc = nlohmann::json::parse(f);
    std::vector<Case> out;
    for (const auto& c : doc.at("cases")) {
      Case k;
      k.name = c.at("name");
      const auto& g = c.at("gen");
      k.gen.kind = g.at("kind");
      k.gen.seed = g.value("seed", 0u);
      k.gen.period = g.value("period", std::uint64_t(0));
      k.gen.run = g.value("run", std::uint64_t(0));
      k.size = c.at("size");
      const auto& feeds = c.at("feeds");
      if (feeds.is_object()) k.feeds.assign(feeds.at("times").get<std::size_t>(), feeds.at("repeat"));
      else k.feeds = feeds.get<std::vector<std::uint64_t>>();
      k.rest_piece = c.at("rest_piece");
      k.file_hash = c.at("file_hash");
      k.sha256 = c.at("sha256");
      for (const auto& ch : c.at("chunks")) k.chunks.emplace_back(ch.at(0), ch.at(1));
      out.push_back(std::move(k));
    }
    return out;
  }();
  return all;
}

constexpr std::uint64_t kInMemory = 16 << 20;  // cases above this are streamed

// The piece sizes a case was fed to the oracle with.
std::vector<std::uint64_t> oracle_pieces(const Case& c) {
  std::vector<std::uint64_t> p = c.feeds;
  std::uint64_t fed = 0;
  for (auto n : p) fed += n;
  while (fed < c.size) {
    p.push_back(std::min(c.rest_piece, c.size - fed));
    fed += p.back();
  }
  return p;
}

struct Outcome {
  std::vector<ChunkRecord> chunks;
  shard::Hash file_hash;
};

Outcome run(const Case& c, const std::vector<std::uint64_t>& pieces) {
  SeededBytes gen(c.gen);
  ChunkHasher h;
  Outcome o;
  std::vector<std::uint8_t> buf;
  for (auto n : pieces) {
    buf.resize(n);
    gen.fill(buf);
    h.update(buf, o.chunks);
  }
  o.file_hash = h.finish(o.chunks);
  return o;
}

void expect_matches(const Case& c, const Outcome& o, const std::string& how) {
  SCOPED_TRACE(c.name + ", " + how);
  ASSERT_EQ(o.chunks.size(), c.chunks.size());
  std::uint64_t offset = 0;
  for (std::size_t i = 0; i < c.chunks.size(); ++i) {
    ASSERT_EQ(o.chunks[i].size, c.chunks[i].first) << "chunk " << i;
    ASSERT_EQ(o.chunks[i].offset, offset) << "chunk " << i;
    ASSERT_EQ(o.chunks[i].hash.to_string(), c.chunks[i].second) << "chunk " << i;
    offset += c.chunks[i].first;
  }
  EXPECT_EQ(o.file_hash.to_string(), c.file_hash);
}

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

// digest_file over a real file: the chunks it reports, the file hash and
// the sha256 (read on the second thread) all match the oracle.
class TempFile {
 public:
  explicit TempFile(const std::vector<std::uint8_t>& bytes) {
    path_ = std::filesystem::temp_directory_path() /
            ("chunk_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    std::ofstream f(path_, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  }
  ~TempFile() { std::filesystem::remove(path_); }
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

TEST(DigestFile, MatchesTheVectors) {
  for (const auto& c : cases()) {
    if (c.size > kInMemory) continue;
    SeededBytes gen(c.gen);
    TempFile f(gen.take(c.size));
    for (std::size_t block : {std::size_t(4096), std::size_t(65536 + 7), std::size_t(4 << 20)}) {
      SCOPED_TRACE(c.name + ", block " + std::to_string(block));
      std::vector<ChunkRecord> seen;
      std::uint64_t progress = 0;
      DigestOptions opt;
      opt.block_size = block;
      opt.on_chunks = [&](std::span<const ChunkRecord> r) { seen.insert(seen.end(), r.begin(), r.end()); };
      opt.on_progress = [&](std::uint64_t done) {
        EXPECT_GE(done, progress);
        progress = done;
      };
      auto d = digest_file(f.path(), opt);
      ASSERT_TRUE(d) << d.error().to_string();
      EXPECT_EQ(d->size, c.size);
      EXPECT_EQ(d->chunks, c.chunks.size());
      EXPECT_EQ(d->file_hash.to_string(), c.file_hash);
      EXPECT_EQ(d->sha256.to_hex_bytes(), c.sha256);
      EXPECT_EQ(progress, c.size);
      Outcome o{seen, d->file_hash};
      expect_matches(c, o, "digest_file");
    }
  }
}

TEST(DigestFile, WithoutSha256) {
  const auto& c = cases().back();
  SeededBytes gen(c.gen);
  TempFile f(gen.take(1 << 20));
  DigestOptions opt;
  opt.sha256 = false;
  auto d = digest_file(f.path(), opt);
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->sha256.is_zero());
  EXPECT_EQ(d->size, 1u << 20);
}

TEST(DigestFile, MissingFileIsAnError) {
  auto d = digest_file("/nonexistent/dir/file");
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().rule, "open");
}

TEST(DigestFile, DirectoryIsAReadError) {
  auto d = digest_file(std::filesystem::temp_directory_path().string());
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().rule, "read");
}

}  // namespace
}  // namespace dedupd::chunk
