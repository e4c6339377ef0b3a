// Internal to the index: how ingest writes a shard's new chunk entries.
#pragma once

#include <cstddef>

namespace dedupd::index::detail {

// Chunk entries ingest sorts and writes per run. The run buffer (16 bytes an
// entry, 4 MiB) is all the memory ingest holds for a shard's entries, so it
// does not grow with the shard; a larger shard takes more passes over its
// xorbs instead. A variable only so that tests can make runs small.
extern std::size_t g_ingest_run_entries;

}  // namespace dedupd::index::detail
