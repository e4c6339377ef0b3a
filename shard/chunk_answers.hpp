// What the local index (index::BatchResult) and the fleet
// (fleet::ChunkAnswers) both answer for a batch of chunk queries. They share
// this library and not each other, so the shape lives here once and the two
// answers cannot drift apart: the daemon merges them field by field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "shard/hash.hpp"

namespace dedupd::shard {

// Where a chunk's bytes are inside its xorb; byte_end is exclusive (start +
// unpacked). flags are the CAS entry's.
struct ChunkPlace {
  Hash xorb{};
  std::uint32_t chunk_index = 0;
  std::uint32_t byte_start = 0;
  std::uint32_t byte_end = 0;
  std::uint32_t unpacked_bytes = 0;
  std::uint32_t flags = 0;

  bool operator==(const ChunkPlace&) const = default;
};

// Answers of a batch, flat so a miss costs no allocation: the locations of
// query i are locations[first[i], first[i + 1]); a location's shards are
// shard_sets[location.shard_set] (shared by a xorb's chunks).
template <class Location, class ShardRef>
struct FlatAnswers {
  std::vector<std::uint32_t> first{};
  std::vector<Location> locations{};
  std::vector<std::vector<ShardRef>> shard_sets{};

  std::size_t size() const { return first.empty() ? 0 : first.size() - 1; }
  std::span<const Location> of(std::size_t i) const {
    return {locations.data() + first[i], locations.data() + first[i + 1]};
  }
  const std::vector<ShardRef>& shards(const Location& l) const { return shard_sets[l.shard_set]; }
  void clear() {
    first.clear();
    locations.clear();
    shard_sets.clear();
  }
};

}  // namespace dedupd::shard
