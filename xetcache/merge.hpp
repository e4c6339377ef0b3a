// The merge writer: several shards of one client cache become one, in
// xet-core's own layout (sections in its hash order, the file, xorb and
// chunk lookup tables, a footer), so the unmodified client loads it like a
// shard it wrote. Content in several members is written once; every file's
// reconstruction is kept.
#pragma once

#include <sys/types.h>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "shard/hash.hpp"
#include "shard/keys.hpp"
#include "shard/reader.hpp"

namespace dedupd::xetcache {

using base::Error;
using base::Result;

struct MergeOptions {
  // Footer creation time; 0 takes the newest member's. The client's size
  // pruning drops the oldest creation first, and a merged shard holds
  // content as recent as its newest member.
  std::uint64_t creation = 0;
  // The file's permission bits, set exactly (not through the umask): the
  // client's user must be able to read what dedupd writes.
  mode_t file_mode = 0644;
};

struct MergeStats {
  std::uint64_t files = 0, xorbs = 0, chunks = 0;  // written
  std::uint64_t duplicate_files = 0;               // seen again in a later member
  std::uint64_t duplicate_xorbs = 0;
};

struct MergedShard {
  std::vector<std::uint8_t> bytes;
  shard::Hash hash;  // shard_file_hash(bytes): its name in the cache
  shard::Key key{};
  std::uint64_t creation = 0;
  std::uint64_t expiry = shard::kNoExpiry;  // the earliest of the members
  MergeStats stats;
};

// Rules: "xetcache.key_mismatch" (members under different HMAC keys),
// "xetcache.verification_mixed" (some files would carry verification
// entries and others not), "xetcache.too_large" (past what 32-bit entry
// indices address), "xetcache.self_check" (the result does not parse: a bug).
Result<MergedShard> merge_views(std::span<const shard::ShardView> members, const MergeOptions& options = {});

struct WrittenShard {
  std::string path;  // <dir>/<hash>.mdb
  shard::Hash hash;
  std::uint64_t size = 0;
  bool existed = false;  // the very bytes were there already: nothing written
};

// A new temporary's path in `dir`: ".dedupd-<uuid>.mdb_temp" (layout.hpp).
std::string steward_temp_path(const std::string& dir);

// Writes `bytes` as the client does, through a temporary (steward_temp_path)
// in `dir`, fsync'd, unless "<hash>.mdb" already holds exactly these bytes
// (then `existed`); renamed to "<hash of the bytes>.mdb", then the directory
// fsync'd. The temporary is removed on failure (a kill leaves it: the
// steward removes it on its next pass). Rule "xetcache.write". `mtime_ns`, when
// not 0, becomes the file's modification time (see merge_files).
Result<WrittenShard> write_shard_file(const std::string& dir, std::span<const std::uint8_t> bytes, mode_t mode = 0644,
                                      std::int64_t mtime_ns = 0);

struct MergeOutcome {
  WrittenShard file;
  // The members the merged file replaces: all of them but one whose bytes
  // the merge reproduced exactly (then its path is file.path, and deleting
  // it would delete the result).
  std::vector<std::string> replaced;
  shard::Key key{};
  std::uint64_t creation = 0;
  std::uint64_t expiry = shard::kNoExpiry;
  MergeStats stats;
};

// Reads each member file (read_regular_file), merges and writes the result into `dir`, with the
// newest member's modification time: the client registers shards newest
// file first and stops indexing at its entry cap, so a merge stamped "now"
// would put old content ahead of newer shards and push those past the cap.
// The
// members are left in place: when to delete `replaced` is the caller's
// decision (a running client session may still read them). A member gone
// since it was planned is an error ("file.open"): plan again.
Result<MergeOutcome> merge_files(std::span<const std::string> member_paths, const std::string& dir,
                                 const MergeOptions& options = {});

}  // namespace dedupd::xetcache
