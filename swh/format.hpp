// The Software Heritage read-only shard, byte for byte as the
// original C implementation writes it (SoftwareHeritage/swh-perfecthash,
// src/_shard/shard.c and shard.h):
//
//   0    magic area, 32 bytes: "SWHShard\0" (9 bytes written), rest zero
//   32   header, 7 x u64 BIG-endian: version (1), objects_count,
//        objects_position (512), objects_size, index_position, index_size,
//        hash_position
//   88   zero up to objects_position
//   512  objects in insertion order: u64 BE size, then the bytes
//   ip   index = objects_position + objects_size: cmph_size() entries of
//        40 bytes: 32-byte key, u64 BE absolute offset of the object's size
//        prefix; unused slots (and deleted objects) are a zero key with
//        offset UINT64_MAX
//   hp   index_position + index_size: the hash function as cmph_dump writes
//        it (CMPH_CHD_PH, graphsize 0.99, keys_per_bin 1, b 4, cmph's
//        default Jenkins hash; cmph's own fields are native = little-endian)
// swh/read_shard.hpp reads it, swh/write_shard.hpp writes it.
#pragma once

#include <array>
#include <cstdint>

#include "base/result.hpp"

namespace dedupd::swh {

using base::Error;
using base::Result;

inline constexpr std::uint64_t kMagicAreaSize = 32;
inline constexpr char kMagic[] = "SWHShard";  // written with its NUL: 9 bytes
inline constexpr std::uint64_t kMagicWritten = sizeof(kMagic);
inline constexpr std::uint64_t kHeaderOffset = 32;
inline constexpr std::uint64_t kHeaderSize = 7 * 8;
inline constexpr std::uint64_t kObjectsOffset = 512;  // SHARD_OFFSET_HEADER
inline constexpr std::uint64_t kVersion = 1;
inline constexpr std::uint64_t kKeySize = 32;
inline constexpr std::uint64_t kIndexEntrySize = kKeySize + 8;
inline constexpr std::uint64_t kNoObject = UINT64_MAX;

using Key = std::array<std::uint8_t, kKeySize>;

struct Header {
  std::uint64_t version = kVersion;
  std::uint64_t objects_count = 0;
  std::uint64_t objects_position = kObjectsOffset;
  std::uint64_t objects_size = 0;
  std::uint64_t index_position = 0;
  std::uint64_t index_size = 0;
  std::uint64_t hash_position = 0;
};

struct IndexEntry {
  Key key{};
  std::uint64_t object_offset = kNoObject;
  bool empty() const { return object_offset == kNoObject; }
};

}  // namespace dedupd::swh
