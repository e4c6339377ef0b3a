#include "daemon/answers/global_dedup_plan.hpp"

#include <algorithm>

namespace dedupd::daemon::answers {

namespace {

std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  return a > shard::kNoExpiry - b ? shard::kNoExpiry : a + b;
}

// How long a reply built from this shard stays valid for the client.
std::uint64_t reply_expiry(const index::ShardRef& s, const ReplySettings& settings) {
  std::uint64_t full = saturating_add(settings.now, settings.lifetime_s);
  if (!s.keyed || !s.expiry) return full;
  return std::min(full, *s.expiry);
}

// Best source first: raw before keyed, then the longest-lived answer, then
// the shard that stays in the index longest, then by hash (stable replies).
bool better(const SourceShard& a, const SourceShard& b, const ReplySettings& settings) {
  if (a.shard.keyed != b.shard.keyed) return !a.shard.keyed;
  std::uint64_t ea = reply_expiry(a.shard, settings), eb = reply_expiry(b.shard, settings);
  if (ea != eb) return ea > eb;
  std::uint64_t la = a.shard.expiry.value_or(shard::kNoExpiry), lb = b.shard.expiry.value_or(shard::kNoExpiry);
  if (la != lb) return la > lb;
  return a.shard.shard < b.shard.shard;
}

}  // namespace

std::optional<ReplyPlan> plan_reply(std::span<const SourceShard> holders, const ReplySettings& settings) {
  // One entry per shard: a chunk stored twice in one shard answers once.
  std::vector<SourceShard> sources;
  for (const SourceShard& h : holders)
    if (std::none_of(sources.begin(), sources.end(),
                     [&](const SourceShard& s) { return s.shard.shard == h.shard.shard; }))
      sources.push_back(h);
  if (sources.empty()) return std::nullopt;
  std::sort(sources.begin(), sources.end(),
            [&](const SourceShard& a, const SourceShard& b) { return better(a, b, settings); });

  ReplyPlan plan;
  const index::ShardRef& best = sources.front().shard;
  plan.rekey = !best.keyed;
  plan.key = best.keyed ? best.key : settings.key;
  plan.expiry = reply_expiry(best, settings);
  for (const SourceShard& s : sources) {
    bool same_key = plan.rekey ? !s.shard.keyed : s.shard.keyed && s.shard.key == best.key;
    if (same_key && reply_expiry(s.shard, settings) >= plan.expiry) plan.sources.push_back(s);
  }
  return plan;
}

ReplyPlan plan_fleet_reply(const fleet::ShardXorbs& source, const ReplySettings& settings) {
  index::ShardRef as_local;
  as_local.keyed = source.key.has_value();
  as_local.key = source.key.value_or(shard::Key{});
  as_local.expiry = source.expiry;
  ReplyPlan plan;
  plan.rekey = !as_local.keyed;
  plan.key = as_local.keyed ? as_local.key : settings.key;
  plan.expiry = reply_expiry(as_local, settings);
  return plan;
}

std::vector<std::size_t> xorb_order(std::size_t count, std::size_t first) {
  std::vector<std::size_t> order;
  if (first >= count) first = 0;
  order.reserve(count);
  for (std::size_t i = first; i < count; ++i) order.push_back(i);
  for (std::size_t i = 0; i < first; ++i) order.push_back(i);
  return order;
}

std::vector<std::size_t> XorbChoice::choose(std::span<const index::Index::XorbHead> heads, const shard::Hash& own) {
  std::size_t first = 0;
  while (first < heads.size() && heads[first].hash != own) ++first;
  std::vector<std::size_t> wanted;
  for (std::size_t pos : xorb_order(heads.size(), first)) {
    const index::Index::XorbHead& h = heads[pos];
    if (taken_.contains(h.hash)) continue;
    std::uint64_t cost = xorb_block_bytes(h.chunks);
    bool must = taken_.empty();  // the chunk's own xorb: the answer itself
    if (!must && (xorbs_left_ == 0 || cost > bytes_left_)) {
      full_ = true;
      break;
    }
    wanted.push_back(pos);
    taken_.insert(h.hash);
    xorbs_left_ -= std::min<std::uint64_t>(xorbs_left_, 1);
    bytes_left_ -= std::min(bytes_left_, cost);
  }
  return wanted;
}

fleet::ShardXorbBounds fleet_source_bounds(const ReplyBounds& bounds) {
  std::uint64_t blocks = bounds.max_bytes > kReplyFramingBytes ? bounds.max_bytes - kReplyFramingBytes : 0;
  return {bounds.max_xorbs, std::min(blocks, kFleetReplyMaxBlockBytes)};
}

}  // namespace dedupd::daemon::answers
