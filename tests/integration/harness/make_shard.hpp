// Valid shards of any size for daemon tests, built with shard::ShardWriter:
// chunk hashes are derived from a seed so each test's shards are distinct.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

#include "shard/hash.hpp"
#include "shard/keys.hpp"

namespace dedupd::itest {

struct ShardSpec {
  std::uint64_t seed = 1;
  std::uint32_t xorbs = 2;
  std::uint32_t chunks_per_xorb = 4;
  std::optional<std::uint64_t> expiry{};  // unix seconds; nullopt: never
  std::optional<shard::Key> key{};        // store keyed chunk hashes
  std::uint64_t created = 1'750'000'000;
  // As the Rust client writes upload shards: a file per xorb (one term over
  // all its chunks, a verification entry, a sha256) and the lookup tables.
  bool client_style = false;
};

struct MadeShard {
  std::vector<std::uint8_t> bytes;
  shard::Hash file_hash;  // the Xet name: <hash>.mdb
  std::vector<shard::Hash> xorbs;
  std::vector<shard::Hash> first_chunks;  // raw hash of each xorb's chunk 0
  std::vector<shard::Hash> raw_chunks;    // raw hash of every chunk, in order
  std::uint64_t chunks = 0;
  std::string file_name() const { return file_hash.to_string() + ".mdb"; }
};

MadeShard make_shard(const ShardSpec& spec);

// Writes bytes to dir/.name.mdb_temp and renames it to dir/name, as the Xet
// client does, so the daemon sees one complete file appear.
std::filesystem::path drop_file(const std::filesystem::path& dir, const std::string& name,
                                const std::vector<std::uint8_t>& bytes);

}  // namespace dedupd::itest
