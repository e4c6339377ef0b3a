// The oracle's vectors (vectors.json, made by xet-core's own chunker with
// make_vectors.mjs): each case's input, how it was fed, and the chunks and
// hashes it must give.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "chunk/chunk_hasher.hpp"
#include "seeded_bytes.hpp"
#include "shard/keys.hpp"

namespace dedupd::chunk::testing {

struct Case {
  std::string name;
  Generator gen;
  std::uint64_t size = 0;
  std::vector<std::uint64_t> feeds;
  std::uint64_t rest_piece = 0;
  std::string file_hash, sha256;
  std::vector<std::pair<std::uint64_t, std::string>> chunks;
};

inline const std::vector<Case>& cases() {
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

inline constexpr std::uint64_t kInMemory = 16 << 20;  // cases above this are streamed

// The piece sizes a case was fed to the oracle with.
inline std::vector<std::uint64_t> oracle_pieces(const Case& c) {
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

inline Outcome run(const Case& c, const std::vector<std::uint64_t>& pieces) {
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

inline void expect_matches(const Case& c, const Outcome& o, const std::string& how) {
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

}  // namespace dedupd::chunk::testing
