// What the Software Heritage read shard tests share: the swh-perfecthash
// test vector, location records and keys made from seeds, file helpers.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "swh/location.hpp"
#include "swh/read_shard.hpp"
#include "swh/write_shard.hpp"
#include "test_support.hpp"
#include "tests/support/temp_dir.hpp"

namespace dedupd::swh::testing {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

using tests::TempDir;

// Files in `dir`: a writer must leave no temporary behind.
inline std::size_t entries(const TempDir& dir) {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()));
}

inline Bytes read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline std::uint64_t be64(const Bytes& b, std::size_t at) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | b[at + i];
  return v;
}

// swh-perfecthash's vector: key i = i as a 32-byte big-endian integer
// (bytes.fromhex(f"{i:-064X}")), value = bytes((65 + i,)) * 42.
inline Key vector_key(unsigned i) {
  Key k{};
  k[31] = static_cast<std::uint8_t>(i);
  return k;
}
inline Bytes vector_value(unsigned i) { return Bytes(42, static_cast<std::uint8_t>(65 + i)); }

inline std::string write_vector(const TempDir& dir) {
  std::string path = dir / "small.shard";
  auto w = Writer::create(path);
  EXPECT_TRUE(w.ok());
  for (unsigned i = 0; i < 16; ++i) EXPECT_TRUE(w->add(vector_key(i), vector_value(i)).ok());
  auto h = w->finish();
  EXPECT_TRUE(h.ok()) << h.error().to_string();
  return path;
}

inline Location location_for(std::uint64_t i, std::uint32_t j) {
  Location l;
  l.xorb = shard::testing::seeded_hash(1'000'000'000 + i / 7);
  l.chunk_index = static_cast<std::uint32_t>(i % 1000 + j);
  l.byte_start = static_cast<std::uint32_t>(i * 3 + j);
  l.byte_end = l.byte_start + 65536 + j;
  l.unpacked_size = 131072 - j;
  return l;
}

inline std::vector<Location> locations_for(std::uint64_t i) {
  std::vector<Location> out;
  for (std::uint32_t j = 0; j < 1 + i % 3; ++j) out.push_back(location_for(i, j));
  return out;
}

inline Key key_of(const shard::Hash& h) {
  Key k;
  std::memcpy(k.data(), h.bytes.data(), 32);
  return k;
}

inline std::string open_rule(const Bytes& b) {
  auto r = Reader::from_bytes(b);
  return r.ok() ? "<ok>" : r.error().rule;
}

}  // namespace dedupd::swh::testing
