// Small, deterministic shards for tests: realistic shape, correct hashes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shard/keys.hpp"
#include "shard/writer.hpp"

namespace dedupd::shard::testing {

// A distinct, reproducible hash per seed.
Hash seeded_hash(std::uint64_t seed);

struct TestXorb {
  XorbRecord record;      // chunk hashes stored keyed when key is non-zero
  std::vector<Hash> raw;  // the raw chunk hashes, in order
};

// A xorb whose hash is the real xorb hash of its raw chunks.
TestXorb make_xorb(std::uint64_t seed, std::size_t chunks, const Key& key = Key{});

struct TermSpec {
  const TestXorb* xorb;
  std::uint32_t start, end;
};

// A file whose hash and unpacked sizes agree with its terms, optionally with
// correct verification entries and a sha256 extension.
FileRecord make_file(std::uint64_t seed, const std::vector<TermSpec>& terms, bool verification, bool metadata_ext);

// Unkeyed: two xorbs, two files with verification and metadata ext.
struct SmallShard {
  std::vector<TestXorb> xorbs;
  ShardWriter writer;
};
SmallShard small_shard(bool verification = true, bool metadata_ext = true);

std::vector<std::uint8_t> read_file(const std::string& path);
std::string fixture_path(const std::string& name);
std::vector<std::uint8_t> fixture_bytes();  // the real server shard

}  // namespace dedupd::shard::testing
