// Generated shards for the index tests and benchmarks, built with the real
// ShardWriter. Hashes come from a seeded PRNG (fast enough for 10 M chunks);
// the index never checks xorb merkle hashes, the shard tests do.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "shard/keys.hpp"
#include "shard/reader.hpp"
#include "shard/writer.hpp"

namespace dedupd::index::gen {

using shard::Hash;
using shard::Key;

// A reproducible pseudo-random hash per seed.
Hash hash_of_seed(std::uint64_t seed);

struct GenXorb {
  Hash hash{};
  std::vector<Hash> raw{};             // raw chunk hashes in order
  std::vector<std::uint32_t> sizes{};  // unpacked sizes
  std::uint32_t byte_start(std::size_t i) const;
};

// n chunks with raw hashes hash_of_seed(seed * 2^20 + i) (so xorbs with
// different seeds share no chunk, for seed < 2^40 and n < 2^20).
GenXorb gen_xorb(std::uint64_t seed, std::size_t n);

struct ShardSpec {
  std::vector<const GenXorb*> xorbs;
  Key key{};                              // zero: raw chunk hashes
  std::optional<std::uint64_t> expiry{};  // nullopt: UINT64_MAX
  std::uint64_t created = 1700000000;     // vary it to get distinct bytes
  std::vector<shard::FileRecord> files{};
  bool footer = true;
};

std::vector<std::uint8_t> build_shard(const ShardSpec& spec);
shard::FileRecord gen_file(std::uint64_t seed, const GenXorb& x, std::uint32_t start, std::uint32_t end,
                           bool verification, bool sha256);

// Parsed bytes kept together with their view.
struct OwnedShard {
  std::vector<std::uint8_t> bytes{};
  std::optional<shard::ShardView> view{};
  Hash hash{};  // shard_file_hash(bytes)
};
OwnedShard own(std::vector<std::uint8_t> bytes);

}  // namespace dedupd::index::gen
