// The three lookup tables the Rust client writes between the CAS bookend and
// the footer, in the one canonical order (truncated key, then index). The
// writer emits them and the integrity check compares a shard's own tables
// against them, so both must agree on exactly one construction.
#pragma once

#include <cstdint>
#include <vector>

#include "shard/format.hpp"

namespace dedupd::shard {

class ShardView;

struct LookupTableSet {
  std::vector<LookupEntry> files;
  std::vector<LookupEntry> xorbs;
  std::vector<ChunkLookupEntry> chunks;

  std::uint64_t byte_size() const {
    return kFileLookupEntrySize * files.size() + kXorbLookupEntrySize * xorbs.size() +
           kChunkLookupEntrySize * chunks.size();
  }
};

bool lookup_less(const LookupEntry& a, const LookupEntry& b);
bool lookup_less(const ChunkLookupEntry& a, const ChunkLookupEntry& b);
bool lookup_equal(const LookupEntry& a, const LookupEntry& b);
bool lookup_equal(const ChunkLookupEntry& a, const ChunkLookupEntry& b);

// Sorts each table into the canonical order.
void sort_lookup_tables(LookupTableSet& tables);

// The canonical tables of a parsed shard: indices count 48-byte entries from
// the start of the file-info and CAS sections; chunk keys are the stored
// (possibly keyed) hashes. Without `chunks`, the chunk table (16 bytes per
// chunk of the shard) is left empty.
LookupTableSet canonical_lookup_tables(const ShardView& view, bool chunks = true);

}  // namespace dedupd::shard
