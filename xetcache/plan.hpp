// Which shards of one client cache to merge, and into which groups: a pure
// function of their descriptions, so the daemon can show a plan before it
// writes anything and tests need no files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "xetcache/constants.hpp"
#include "xetcache/shards.hpp"

namespace dedupd::xetcache {

struct ConsolidationPolicy {
  // A merged shard stays within the size the client itself merges to.
  std::uint64_t target_size = kXetShardTargetSize;
  // ... and holds at most this many chunk entries (policy_for_cap): under a
  // cap so small that target_size's floor holds more than an eighth of it,
  // bytes alone would let one merge gather most of the cap.
  std::uint64_t max_group_chunk_entries = UINT64_MAX;
  // Only shards under this are merged. The client pays per file (open,
  // header, footer: #853 measured about 6 ms each) and per chunk entry; a
  // shard of a quarter of the target already spreads its file cost over
  // enough entries, and rewriting it would cost more bytes than it saves.
  std::uint64_t small_shard_bytes = kXetShardTargetSize / 4;
  // Nothing is merged until the cache holds this many small shards: below it
  // a session start spends a fraction of a second on them, and each merge
  // rewrites bytes and makes the client's running sessions' views stale.
  std::size_t min_small_shards = 32;
  // Members share an expiry bucket (default: the UTC day). The merged shard
  // takes the earliest member expiry, so within a day no entry loses more
  // than a day of life; 0 groups only equal expiries.
  std::uint64_t expiry_bucket_seconds = 24 * 3600;
  // A shard with less life than this left is not worth rewriting: it goes
  // away soon anyway.
  std::uint64_t min_life_left_seconds = 24 * 3600;
};

struct MergeGroup {
  std::vector<std::size_t> members;  // indices into the input, oldest creation first
  ShardKind kind = ShardKind::plain;
  shard::Key key{};
  std::uint64_t expiry = shard::kNoExpiry;  // the earliest of the members
  std::uint64_t max_bytes = 0;              // the merged shard is at most this (deduplication only shrinks it)
  std::uint64_t chunk_entries = 0;          // the members' sum (deduplication only shrinks it)
};

// The policy for a cache held at `max_chunk_entries`: the target shrinks to
// about an eighth of what the cap holds (64 bytes an entry: its CAS entry
// and lookup row), so that under a small cap (the local Xet endpoint's
// 1 Mi entries) a cache is several merged files that eviction can take
// oldest first, not one that fills the cap and goes whole. Under the
// client's own cap it stays xet-core's 64 MiB. Never under 1 MiB, so under a
// cap of fewer than 128 Ki entries the group's chunk entries are bounded by
// an eighth of the cap as well.
ConsolidationPolicy policy_for_cap(ConsolidationPolicy base, std::uint64_t max_chunk_entries);

// The size a merge of `members` of `shards` cannot exceed: one header, two
// bookends and one footer plus each member's merged_bytes.
std::uint64_t merged_size_bound(std::span<const ShardDesc> shards, std::span<const std::size_t> members);

// Groups of at least two shards of one kind, key and expiry bucket, each
// within target_size and max_group_chunk_entries; empty when the cache does
// not have enough small shards. Shards the client no longer loads (expired
// at `now`) are left to eviction.
std::vector<MergeGroup> plan_consolidation(std::span<const ShardDesc> shards, const ConsolidationPolicy& policy,
                                           std::uint64_t now);

}  // namespace dedupd::xetcache
