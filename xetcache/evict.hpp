// Caps the client cannot keep: its size limit is soft (checked at session
// start only) and past its chunk-index limit it silently stops indexing
// later shards. A pure planner says which files to delete, least useful
// first, so that both caps hold.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "xetcache/constants.hpp"
#include "xetcache/shards.hpp"

namespace dedupd::xetcache {

struct Caps {
  std::uint64_t max_bytes = kXetCacheSizeLimit;
  // Entries the client indexes; beyond it later shards give no dedup.
  std::uint64_t max_chunk_entries = kXetChunkIndexMaxEntries;
};

struct EvictionPolicy {
  Caps caps;
  // "Soonest to expire" compares expiries at this granularity (default the
  // UTC day, as consolidation groups them), so least recently used decides
  // among shards that expire the same day; 0 compares exact seconds.
  std::uint64_t expiry_granularity_seconds = 24 * 3600;
  // Also delete every shard the client no longer loads even when the caps
  // hold. Off by default: dedupd's expiry already deletes expired shards
  // after its grace.
  bool always_evict_expired = false;
};

// Every shard, least useful first: expired (for the client) by expiry, then
// by expiry bucket, then least recently used (ShardDesc::last_used), then
// path, so equal inputs give one order.
std::vector<std::size_t> eviction_order(std::span<const ShardDesc> shards, const EvictionPolicy& policy,
                                        std::uint64_t now);

struct EvictionPlan {
  std::vector<std::size_t> evict;  // indices into the input, in the order to delete
  CacheUsage before, after;
};

// The shortest prefix of eviction_order() after which both caps hold (plus
// every expired shard with always_evict_expired).
EvictionPlan plan_eviction(std::span<const ShardDesc> shards, const EvictionPolicy& policy, std::uint64_t now);

}  // namespace dedupd::xetcache
