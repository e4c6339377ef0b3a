// What the steward remembers of one endpoint's shard-cache/ from pass to
// pass.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "daemon/core/status.hpp"
#include "daemon/xetcache/held_back.hpp"
#include "xetcache/shards.hpp"

namespace dedupd::daemon::xetcache {

// The original of a merge, still on disk until the rules let it go.
struct PendingDeletion {
  std::string original;
  std::string merged;
  std::uint64_t since_mono = 0;  // since when the original is wanted gone
};

// A shard file as last described, valid while its size and mtime hold:
// a pass then parses only the files that are new or changed.
struct DescribedFile {
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  dedupd::xetcache::ShardDesc desc;
};

struct EndpointState {
  core::XetCacheStatus status;
  std::vector<PendingDeletion> pending;              // originals of merges, still on disk
  std::map<std::string, std::uint64_t> evicting;     // path -> since when the caps want it gone (monotonic)
  std::map<std::string, DescribedFile> described;    // by path
  HeldBackList held_back;                            // by file path, or group_key of the members
  std::map<std::string, std::string> holds_removed;  // merged file -> an admin-removed original it holds
};

}  // namespace dedupd::daemon::xetcache
