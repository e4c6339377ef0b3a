// One shard of a client cache as the planners see it: what it costs the
// client (bytes on disk, chunk entries it indexes at every session start)
// and what decides where it may go (key, expiry, kind).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "shard/keys.hpp"
#include "shard/reader.hpp"
#include "xetcache/layout.hpp"

namespace dedupd::xetcache {

// Shards merge only with their own kind: a merged shard must be as valid as
// each member, and xet-core rejects a shard in which only some files carry
// verification entries (so do dedupd's reader and the CAS).
enum class ShardKind : std::uint8_t {
  keyed,     // chunk hashes under an HMAC key: a global-dedup reply
  verified,  // unkeyed, files with verification entries: an exported upload
  plain,     // unkeyed, files without verification entries, or no files
};

struct ShardDesc {
  std::string path;
  std::uint64_t size = 0;                   // bytes on disk
  std::uint64_t chunk_entries = 0;          // what the client's chunk index takes
  shard::Key key{};                         // zero: unkeyed
  std::uint64_t creation = 0;               // footer shard_creation_timestamp
  std::uint64_t expiry = shard::kNoExpiry;  // footer shard_key_expiry, raw
  ShardKind kind = ShardKind::plain;
  // What it adds to a merged shard: its entries and their lookup-table rows,
  // without header, bookends and footer. Server replies carry no tables, so
  // this can exceed `size`; the plan sizes groups with it.
  std::uint64_t merged_bytes = 0;
  // When the caller last saw the shard used (unix s); the eviction order's
  // last criterion. describe() leaves the file's mtime here.
  std::uint64_t last_used = 0;
};

ShardKind kind_of(const shard::ShardView& view);

// Everything but the path and times from a parsed shard.
ShardDesc describe(const shard::ShardView& view, std::string path);

// The whole of a regular file, read with pread into memory: never mapped,
// because the client (or anyone) may truncate a cache file while it is read,
// and a mapped page past the new end is a SIGBUS that kills the daemon. The
// last component is opened without following a symbolic link, and only a
// regular file is read (checked on the descriptor, so a swap after a stat
// cannot slip a link or a FIFO in). Rules "file.open" (ELOOP for a link),
// "file.read", "xetcache.not_regular", "xetcache.truncated" (it shrank while
// read), each naming the path.
Result<std::vector<std::uint8_t>> read_regular_file(const std::string& path);

// Reads (read_regular_file) and parses one file. A shard dedupd's reader
// rejects is an error (with the reader's rule); the caller leaves such files
// alone.
Result<ShardDesc> describe_file(const ShardFile& file);

struct CacheUsage {
  std::uint64_t files = 0;
  std::uint64_t bytes = 0;
  std::uint64_t chunk_entries = 0;
};
CacheUsage usage_of(std::span<const ShardDesc> shards);

struct UnreadableShard {
  std::string path;
  Error error;
};

struct CacheScan {
  std::vector<ShardDesc> shards;  // in the order listed
  std::vector<UnreadableShard> unreadable;
  CacheUsage usage;  // of `shards`
};

// Describes every file of a listing; unreadable ones are reported, not fatal.
CacheScan scan(std::span<const ShardFile> files);

}  // namespace dedupd::xetcache
