// Internal to the index: the sizes that bound what a write transaction
// holds in memory. Variables only so that tests can make them small.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace dedupd::index::detail {

// Chunk entries ingest sorts and writes per run. The run buffer (16 bytes an
// entry, 4 MiB) is all the memory ingest holds for a shard's entries, so it
// does not grow with the shard; a larger shard takes more passes over its
// xorbs instead.
extern std::size_t g_ingest_run_entries;

// A merge step (merge.cpp) stops adding key bytes once the keys it took hold
// this many entries in both chunk tables (it always takes one): it dirties
// nearly every page of those keys, so this bounds its pages at any index size.
extern std::uint64_t g_merge_step_entries;

// A merge writes a key byte afresh, pages filled, when the key holds at most
// this many entries in the main table (2 Mi: 24 MiB copied at a time, a
// 512 M-entry index); past that it merges in place, pages two thirds full.
extern std::uint64_t g_merge_rewrite_entries;

// Chunk entries removal sorts and deletes per run (16 bytes each, 4 MiB,
// as ingest): what it holds of a shard's entries, whatever its size.
extern std::size_t g_remove_run_entries;

// Chunk entries a chunk filter build logs while it reads (5 bytes each,
// 20 MiB): the daemon's private memory stays bounded when ingest runs flat
// out beside a long build (two minutes at 268 M entries). Past it the build
// is given up and asked again once ingest is idle.
extern std::size_t g_filter_catch_up_entries;

// Chunk entries one transaction of the chunk-entry upgrade (upgrade.hpp)
// rewrites (whole key bytes, always one): 2^19 is at most 6 MiB copied and
// about 1,500 pages dirtied.
extern std::uint64_t g_upgrade_step_entries;
// Tests: called after each committed step of that upgrade (a kill there is
// a throw that leaves the index as a kill would).
extern std::function<void()> g_after_upgrade_step;

}  // namespace dedupd::index::detail
