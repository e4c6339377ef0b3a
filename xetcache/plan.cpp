#include "xetcache/plan.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace dedupd::xetcache {

namespace {

constexpr std::uint64_t kShardOverhead = shard::kHeaderSize + 2 * shard::kEntrySize + shard::kFooterSize;

std::uint64_t expiry_bucket(std::uint64_t expiry, std::uint64_t seconds) {
  if (expiry == shard::kNoExpiry || seconds == 0) return expiry;
  return expiry / seconds;
}

bool worth_merging(const ShardDesc& s, const ConsolidationPolicy& policy, std::uint64_t now) {
  if (s.size >= policy.small_shard_bytes || expired_for_client(s.expiry, now)) return false;
  return s.expiry == shard::kNoExpiry || s.expiry - now >= policy.min_life_left_seconds;
}

using GroupKey = std::tuple<ShardKind, shard::Key, std::uint64_t>;

}  // namespace

std::uint64_t merged_size_bound(std::span<const ShardDesc> shards, std::span<const std::size_t> members) {
  std::uint64_t total = kShardOverhead;
  for (std::size_t i : members) total += shards[i].merged_bytes;
  return total;
}

ConsolidationPolicy policy_for_cap(ConsolidationPolicy base, std::uint64_t max_chunk_entries) {
  constexpr std::uint64_t kBytesPerEntry = 64, kFloor = 1ull << 20;
  const std::uint64_t eighth =
      max_chunk_entries / 8 > UINT64_MAX / kBytesPerEntry ? UINT64_MAX : max_chunk_entries / 8 * kBytesPerEntry;
  const std::uint64_t target = std::max(kFloor, std::min(base.target_size, eighth));
  base.max_group_chunk_entries =
      std::min(base.max_group_chunk_entries, std::max<std::uint64_t>(1, max_chunk_entries / 8));
  if (target < base.target_size) {
    base.small_shard_bytes = std::max<std::uint64_t>(1, base.small_shard_bytes / (base.target_size / target));
    base.target_size = target;
  }
  return base;
}

std::vector<MergeGroup> plan_consolidation(std::span<const ShardDesc> shards, const ConsolidationPolicy& policy,
                                           std::uint64_t now) {
  std::map<GroupKey, std::vector<std::size_t>> buckets;
  std::size_t small = 0;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const ShardDesc& s = shards[i];
    if (!worth_merging(s, policy, now)) continue;
    ++small;
    buckets[{s.kind, s.key, expiry_bucket(s.expiry, policy.expiry_bucket_seconds)}].push_back(i);
  }
  std::vector<MergeGroup> out;
  if (small < policy.min_small_shards) return out;

  for (auto& [key, members] : buckets) {
    // Oldest first, so a group holds content of a similar age, as the
    // client's own merge of session shards does (by modification time).
    std::sort(members.begin(), members.end(), [&](std::size_t a, std::size_t b) {
      return std::tie(shards[a].creation, shards[a].path) < std::tie(shards[b].creation, shards[b].path);
    });
    MergeGroup g;
    auto flush = [&] {
      if (g.members.size() >= 2) out.push_back(g);
      g = MergeGroup{};
    };
    for (std::size_t i : members) {
      const ShardDesc& s = shards[i];
      if (!g.members.empty() && (g.max_bytes + s.merged_bytes > policy.target_size ||
                                 g.chunk_entries + s.chunk_entries > policy.max_group_chunk_entries))
        flush();
      if (g.members.empty()) {
        g.kind = s.kind;
        g.key = s.key;
        g.max_bytes = kShardOverhead;
      }
      g.members.push_back(i);
      g.max_bytes += s.merged_bytes;
      g.chunk_entries += s.chunk_entries;
      g.expiry = std::min(g.expiry, s.expiry);
    }
    flush();
  }
  return out;
}

}  // namespace dedupd::xetcache
