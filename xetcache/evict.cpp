#include "xetcache/evict.hpp"

#include <algorithm>
#include <numeric>
#include <tuple>

namespace dedupd::xetcache {

namespace {

bool over_caps(const CacheUsage& u, const Caps& caps) {
  return u.bytes > caps.max_bytes || u.chunk_entries > caps.max_chunk_entries;
}

}  // namespace

std::vector<std::size_t> eviction_order(std::span<const ShardDesc> shards, const EvictionPolicy& policy,
                                        std::uint64_t now) {
  auto rank = [&](std::size_t i) {
    const ShardDesc& s = shards[i];
    bool live = !expired_for_client(s.expiry, now);
    std::uint64_t when = s.expiry;
    if (live && s.expiry != shard::kNoExpiry && policy.expiry_granularity_seconds != 0)
      when = s.expiry / policy.expiry_granularity_seconds;
    return std::make_tuple(live, when, s.last_used, std::cref(s.path));
  };
  std::vector<std::size_t> order(shards.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return rank(a) < rank(b); });
  return order;
}

EvictionPlan plan_eviction(std::span<const ShardDesc> shards, const EvictionPolicy& policy, std::uint64_t now) {
  EvictionPlan plan;
  plan.before = plan.after = usage_of(shards);
  for (std::size_t i : eviction_order(shards, policy, now)) {
    const ShardDesc& s = shards[i];
    bool expired = expired_for_client(s.expiry, now);
    if (!over_caps(plan.after, policy.caps) && !(expired && policy.always_evict_expired)) break;
    plan.evict.push_back(i);
    --plan.after.files;
    plan.after.bytes -= s.size;
    plan.after.chunk_entries -= s.chunk_entries;
  }
  return plan;
}

}  // namespace dedupd::xetcache
