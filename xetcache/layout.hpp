// Where the Xet client keeps its shards under a managed root (an
// HF_XET_CACHE-style directory), and which of them it would load.
//
//   <root>/<endpoint>/shard-cache/<64 hex>.mdb           loaded every session
//   <root>/<endpoint>/staging/shard-session/<tempdir>/   one per running session
//   <root>/<endpoint>/staging/shard-session/xorb_metadata/  resumable uploads
//
// Only file names matter here: nothing is opened (shards.hpp reads them).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"

namespace dedupd::xetcache {

using base::Error;
using base::Result;

// The client's own pattern, ^[0-9a-fA-F]{64}\.mdb$, on a bare file name.
// Its temporaries (".<uuid>.mdb_temp") and anything else do not match.
bool is_loadable_shard_name(std::string_view name);

// dedupd's own temporaries, ".dedupd-<uuid>.mdb_temp" (merge.hpp): named
// apart from the client's so that one left by a killed merge can be told
// from a client's write in progress, and removed.
inline constexpr std::string_view kStewardTempPrefix = ".dedupd-";
inline constexpr std::string_view kTempSuffix = ".mdb_temp";
bool is_steward_temp_name(std::string_view name);

struct ShardFile {
  std::string path;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
};

struct SessionDir {
  std::string path;
  std::vector<ShardFile> shards;  // loadable names only
};

struct EndpointCache {
  std::string dir;                // <root>/<endpoint>
  std::string shard_cache;        // <dir>/shard-cache; empty when the client made none yet
  std::vector<ShardFile> shards;  // of shard_cache, sorted by path
  // Temporary directories of client sessions (running ones, or left by a
  // killed process). hf_xet 1.8.0 makes one only while a session finalizes,
  // so they do not say whether a client is running: the daemon's steward
  // asks the client's logs instead (daemon/xetcache/steward.hpp).
  std::vector<SessionDir> sessions;
  std::optional<SessionDir> xorb_metadata;
  // What could not be read (shard-cache/ itself, a session dir): reported,
  // never a reason to leave the rest of the endpoint or root unlooked at.
  std::vector<Error> problems;
};

// The loadable shard files directly in `dir`, sorted by path. Symbolic links
// and subdirectories are skipped: the cache only ever holds regular files.
Result<std::vector<ShardFile>> list_shard_files(const std::string& dir);

// dedupd's temporaries directly in `dir` (regular files only), sorted.
Result<std::vector<ShardFile>> list_steward_temps(const std::string& dir);

// Every endpoint directory of `root` (a child with shard-cache/ or staging/),
// sorted by path; `root` alone when it is an endpoint directory itself.
// Rule "xetcache.layout" names the path that failed: `root` itself only; a
// part of an endpoint that cannot be read is in its `problems`.
Result<std::vector<EndpointCache>> discover(const std::string& root);

// One directory as an endpoint; nullopt when it has neither subdirectory.
Result<std::optional<EndpointCache>> endpoint_at(const std::string& dir);

}  // namespace dedupd::xetcache
