// The object dedupd stores per chunk hash in an exported Software Heritage
// read shard (`dedupctl export --format swh-shard`): every known location of
// the chunk. Key = the raw 32-byte chunk hash (bytes as stored in Xet shards,
// unkeyed). All integers are BIG-endian, like every integer of the SWH file
// around them, so one rule covers the whole file.
//
//   u32 count                      number of locations, >= 1
//   count x 48 bytes:
//     32  xorb hash               raw bytes, as stored in Xet shards
//      4  chunk index             position of the chunk in its xorb
//      4  byte start              chunk's first byte in the (serialized) xorb
//      4  byte end                exclusive
//      4  unpacked size           the chunk's size uncompressed
//
// Size = 4 + 48 * count exactly. decode_locations() rejects anything else
// (rules location.size, location.count, location.range with the byte offset
// inside the object).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/result.hpp"
#include "shard/hash.hpp"

namespace dedupd::swh {

inline constexpr std::size_t kLocationSize = 48;

struct Location {
  shard::Hash xorb;
  std::uint32_t chunk_index = 0;
  std::uint32_t byte_start = 0;
  std::uint32_t byte_end = 0;
  std::uint32_t unpacked_size = 0;

  bool operator==(const Location&) const = default;
};

std::vector<std::uint8_t> encode_locations(std::span<const Location> locations);
base::Result<std::vector<Location>> decode_locations(std::span<const std::uint8_t> object);

}  // namespace dedupd::swh
