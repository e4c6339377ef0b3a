// The jobs a steward's pass does over one endpoint's shard-cache/, in this
// order (CacheSteward::run_endpoint): take the inventory, delete the
// originals of merges the rules let go, merge one group, evict to the caps.
// Each job is a file of its own; what they share is the PassContext. Every
// decision to delete is xetcache::may_delete; every file is touched through
// the probes (StewardFiles), which a dry run replaces.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "daemon/config/config.hpp"
#include "daemon/core/status.hpp"
#include "daemon/xetcache/endpoint_state.hpp"
#include "daemon/xetcache/held_back.hpp"
#include "daemon/xetcache/probes.hpp"
#include "index/index.hpp"
#include "xetcache/layout.hpp"
#include "xetcache/plan.hpp"
#include "xetcache/rules.hpp"
#include "xetcache/shards.hpp"

namespace dedupd::daemon::xetcache {

// Thrown by PassContext::progress when a stop is asked: unwinds a pass to
// CacheSteward::run. Not a std::exception, so the per-endpoint handlers let
// it through.
struct StewardPassStopped {};

struct PassContext {
  const index::Index& index;
  StewardFiles& files;
  const config::XetCacheConfig& config;
  const dedupd::xetcache::ConsolidationPolicy& consolidation;
  Backoff backoff;
  const dedupd::xetcache::LivenessVerdict& liveness;
  std::uint64_t now_mono = 0;
  std::uint64_t now_wall = 0;
  // A dry run's steps for this endpoint; null in a real pass, which logs
  // what it did instead.
  std::vector<core::XetCachePlanStep>* dry_steps = nullptr;
  // Between files: counts them for the status, throws StewardPassStopped
  // when a stop is asked.
  std::function<void()> progress;
  // Writes the journal of pending deletions now: a merge's originals are
  // journaled before anything else happens.
  std::function<void()> journal;

  std::uint64_t grace_s() const { return std::uint64_t(config.replaced_grace.count()); }
  void hold_back(EndpointState& ep, const std::string& key, std::string reason) const {
    ep.held_back.fail(key, std::move(reason), now_mono, backoff);
  }
};

// What the index says of a file. taken: the index took the file and its
// shard is live or expired (the caps may still want an expired one gone
// when dedupd's own expiry keeps files).
enum class FileState : std::uint8_t { not_ours, taken, removed };
struct FileFacts {
  FileState state = FileState::not_ours;
  bool unchanged = false;  // size and mtime as when the index took it
};
FileFacts file_facts(const index::Index& index, const std::string& path);

// inventory.cpp: removes the temporaries a killed merge left (not in a dry
// run), then describes the files dedupd took, parsing only new or changed
// ones, into ep.described.
struct Inventory {
  std::set<std::string> on_disk;
  std::set<std::string> removed;  // files of shards an admin removed: kept, counted, never touched
};
Inventory take_inventory(const PassContext& ctx, EndpointState& ep, const std::string& shard_cache,
                         const std::vector<dedupd::xetcache::ShardFile>& files);
dedupd::xetcache::CacheUsage usage_of(const std::map<std::string, DescribedFile>& described);

// replaced.cpp: the originals of merges go when the rules let them.
struct Replaced {
  dedupd::xetcache::CacheUsage gone;  // of the described files deleted
  bool deleted = false;
};
Replaced delete_replaced(const PassContext& ctx, EndpointState& ep, const Inventory& inventory);

// What the pending deletions cover: their originals are not planned again,
// their merged files not evicted, and they still count against the caps.
struct Coverage {
  std::set<std::string> covered;
  std::set<std::string> merge_targets;
  dedupd::xetcache::CacheUsage pending;
};
Coverage coverage_of(const EndpointState& ep);

// merging.cpp: merges at most one group (a failing one is held back and the
// next tried), adding its members to `coverage`. True when it wrote a file.
bool merge_one_group(const PassContext& ctx, EndpointState& ep, const std::string& shard_cache, Coverage& coverage,
                     const Inventory& inventory);

// eviction.cpp: deletes what the caps want gone, as the rules let it.
struct Eviction {
  dedupd::xetcache::CacheUsage left;   // of the evictable files, after
  dedupd::xetcache::CacheUsage fixed;  // what the client loads that was not up for eviction
  bool deleted = false;
};
Eviction evict_to_caps(const PassContext& ctx, EndpointState& ep, const dedupd::xetcache::CacheUsage& before,
                       const dedupd::xetcache::CacheUsage& gone, const Coverage& coverage, const Inventory& inventory);

// status.cpp: an endpoint's status at the start and at the end of its pass.
void begin_endpoint_status(core::XetCacheStatus& st, const std::string& dir, const config::XetCacheConfig& config,
                           const dedupd::xetcache::LivenessVerdict& liveness, const std::vector<std::int64_t>& clients,
                           std::uint64_t now_wall);
void end_endpoint_status(EndpointState& ep, const Eviction& eviction, const Coverage& coverage, std::uint64_t now_mono);

}  // namespace dedupd::daemon::xetcache
