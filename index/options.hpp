// How an index is opened (Index::open): where, how large its map may grow,
// the in-memory chunk filters' budget, and the hooks the caller gives it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "index/observer.hpp"

namespace dedupd::index {

struct Options {
  std::string dir{};  // created if missing (one level)
  // Initial map; it grows when full, by a 64th or more. data.mdb is as
  // large as the map, every byte of it reserved on disk (index/env.hpp).
  std::uint64_t map_size = 1ull << 20;
  std::uint64_t max_map_size = 1ull << 40;  // growth stops here
  unsigned max_readers = 256;               // concurrent read transactions, all processes
  Observer* observer = nullptr;             // not owned; may be null
  // New chunk entries go to a small table merged into the main one when it
  // exceeds max(merge_threshold, main / 16) entries (tables.hpp says why).
  std::uint64_t merge_threshold = 1u << 18;
  // How long one ingest goes on with a merge under way before it returns
  // (the merge goes on after the next): what an ingest adds to the longest
  // the daemon's work loop is held up.
  std::chrono::milliseconds merge_slice{500};
  // Benchmarks only: MDB_NOSYNC. A crash of the machine (not of the process)
  // can lose acknowledged shards. Never set in the daemon.
  bool no_sync_for_benchmarks = false;
  // How many chunk entries a chunk filter build reads in one snapshot: about
  // a quarter of a second, the longest a growth of the map then waits for it
  // (tests make it small to cross many snapshots).
  std::uint64_t filter_build_entries_per_snapshot = 1u << 20;
  // The most memory the in-memory chunk filters take together (the one of
  // both chunk tables and the recent table's; chunk_filter.hpp): sized at
  // 10 bits an entry from the index, 1.25 B an entry and a quarter more for
  // growth. Past what fits, they saturate and lookups search more absent
  // forms (same answers). A rebuild holds the old filters and the new ones
  // at once, so the peak is up to twice this. 512 MiB fits about 268 M
  // entries at full strength.
  std::uint64_t filter_memory = std::uint64_t(512) << 20;
  // The fewest entries a chunk filter is sized for, however small the index
  // (tests make it small to outgrow filters with few entries).
  std::uint64_t filter_floor_entries = 1u << 20;  // ChunkFilter::kFloorEntries
  // An existing index, opened for reading only (MDB_RDONLY; `dedupd
  // --check`): nothing is created, an older schema is not upgraded
  // (schema_version() says which it is), and every write fails.
  bool read_only = false;
  // The upgrade to schema 7 gives each shard the CAS its paths name (the
  // caller's rule: client cache directories, watch settings); empty: unknown.
  // Unset: every shard of an older index stays unknown.
  std::function<std::string(const std::string& path)> scope_of_path{};
};

}  // namespace dedupd::index
