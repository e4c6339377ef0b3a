// Walking the index for an export: every chunk stored with its RAW hash
// (chunks of xorb forms that came from unkeyed shards), with all its
// locations, in one read snapshot. `dedupd` uses it to write the Software
// Heritage read shard (index/swh_export.hpp); anything else that wants the
// raw part of the index (a dump, a check) can use it the same way.
//
// Order and grouping: the chunk tables are sorted by the stored hash's first
// 6 bytes (records.hpp), so the walk merges `chunks` and `chunks_recent` in
// that order, reads the full hash of each entry from its xorb record, and
// hands the visitor each raw chunk hash ONCE with every location it has
// (a chunk in two xorbs, or twice in one xorb, comes as one call with two
// locations). Hashes arrive in ascending byte order, each exactly once.
//
// Memory: only the entries sharing one 6-byte prefix are held at a time
// (almost always one), plus a bounded cache of xorb record views; nothing
// grows with the index. Keyed xorb forms are skipped entry by entry (their
// stored hashes are keyed, and cannot be un-keyed).
//
// Cost: one B-tree probe of the xorb table per chunk entry (neighbours in
// hash order sit in unrelated xorbs), inside one read transaction held for
// the whole walk. Readers never block the writer, but while the walk runs
// LMDB cannot reuse pages freed after it began, and a map growth (rare)
// waits for it to end.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "index/index.hpp"

namespace dedupd::index {

// One place a raw chunk lives: as Location, without the shard list.
using RawLocation = shard::ChunkPlace;

struct WalkCounts {
  std::uint64_t chunks = 0;         // distinct raw chunk hashes visited
  std::uint64_t locations = 0;      // locations handed to the visitor
  std::uint64_t keyed_entries = 0;  // chunk entries skipped: keyed xorb forms
};

// Called once per raw chunk hash, in ascending byte order; `locations` is
// sorted (xorb bytes, chunk index, ...) without duplicates and never empty.
// A visitor error stops the walk and is returned as is.
using RawChunkVisitor = std::function<Status(const Hash& raw_chunk, std::span<const RawLocation> locations)>;

class RawChunkWalker {
 public:
  static Result<WalkCounts> walk(const Index& index, const RawChunkVisitor& visit);
};

inline Result<WalkCounts> for_each_raw_chunk(const Index& index, const RawChunkVisitor& visit) {
  return RawChunkWalker::walk(index, visit);
}

}  // namespace dedupd::index
