// Shard files in a temporary client cache, for the xetcache tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shard/keys.hpp"
#include "shard/reader.hpp"
#include "shard/writer.hpp"
#include "xetcache/shards.hpp"

namespace dedupd::xetcache::testing {

// The planners' clock in the tests, and a day of it.
inline constexpr std::uint64_t kNow = 1'750'000'000;
inline constexpr std::uint64_t kDay = 24 * 3600;

struct FooterSpec {
  shard::Key key{};
  std::uint64_t creation = 1'700'000'000;
  std::uint64_t expiry = shard::kNoExpiry;
  shard::LookupTables tables = shard::LookupTables::build;
};

std::vector<std::uint8_t> shard_bytes(const shard::ShardWriter& w, const FooterSpec& spec);

// Writes the bytes as the client names them, <hash>.mdb in `dir`; returns the path.
std::string put_shard(const std::string& dir, const std::vector<std::uint8_t>& bytes);

shard::ShardView parse_or_fail(const std::vector<std::uint8_t>& bytes);

// Names in `dir`, sorted (dot files too).
std::vector<std::string> names_in(const std::string& dir);

// A description for the planners, without files.
ShardDesc desc(std::string path, std::uint64_t size, std::uint64_t entries, std::uint64_t expiry,
               const shard::Key& key = {}, ShardKind kind = ShardKind::verified);

}  // namespace dedupd::xetcache::testing
