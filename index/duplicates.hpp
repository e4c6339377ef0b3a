// One key's duplicates in a chunk table, read and written in bulk: the
// merge (merge.cpp) and the schema-5 upgrade (upgrade.cpp) both copy a key
// out and write it afresh.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "index/impl.hpp"
#include "index/records.hpp"

namespace dedupd::index::detail {

using ChunkKey = std::array<std::uint8_t, records::kChunkKeyBytes>;

// The duplicates of `key` in the cursor's table (0 when it has none).
int key_entries(const Cursor& c, const ChunkKey& key, std::uint64_t& n);

// Appends the `count` duplicates of `key` to `out`, a page at a time: they
// are copied because writing moves pages.
int copy_duplicates(const Cursor& c, const ChunkKey& key, std::uint64_t count, std::vector<std::uint8_t>& out);

// Puts `values` (whole records of `width` bytes, in order) under `key` in
// one call; `flags` adds MDB_APPENDDUP when they all go after what is there.
int put_duplicates(const Cursor& c, const ChunkKey& key, std::span<const std::uint8_t> values, std::size_t width,
                   unsigned flags);

}  // namespace dedupd::index::detail
