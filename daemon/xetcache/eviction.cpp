// A pass's last job: the caps, whatever the merges did. Pending originals
// still count (the client loads them until they go), so the room left for
// the rest is smaller by what they hold. A merged file whose originals wait
// is not evicted: that would undo the merge and keep both costs meanwhile.
// A merged file holding a removed shard's content is no merge member, but
// it is evictable in its turn like any file the steward wrote: kept out, it
// would hold its room for ever and newer content would go instead.
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "daemon/xetcache/pass_jobs.hpp"
#include "xetcache/evict.hpp"

namespace dedupd::daemon::xetcache {

namespace {

// Saturating: a miscount must leave more room, never evict everything.
std::uint64_t room_minus(std::uint64_t a, std::uint64_t b, std::uint64_t c) { return a > b + c ? a - b - c : 0; }

}  // namespace

Eviction evict_to_caps(const PassContext& ctx, EndpointState& ep, const dedupd::xetcache::CacheUsage& before,
                       const dedupd::xetcache::CacheUsage& gone, const Coverage& coverage, const Inventory& inventory) {
  Eviction out;
  std::vector<dedupd::xetcache::ShardDesc> evictable;
  for (const auto& [path, entry] : ep.described)
    if (!coverage.covered.contains(path) && !coverage.merge_targets.contains(path) &&
        !ep.held_back.holds(path, ctx.now_mono) && !inventory.removed.contains(path))
      evictable.push_back(entry.desc);
  // Everything the client loads that is not up for eviction takes room first.
  const dedupd::xetcache::CacheUsage evictable_usage = dedupd::xetcache::usage_of(evictable);
  out.fixed.files = room_minus(before.files, gone.files, evictable_usage.files);
  out.fixed.bytes = room_minus(before.bytes, gone.bytes, evictable_usage.bytes);
  out.fixed.chunk_entries = room_minus(before.chunk_entries, gone.chunk_entries, evictable_usage.chunk_entries);
  const config::XetCacheConfig& config = ctx.config;
  dedupd::xetcache::EvictionPolicy policy;
  policy.caps = {
      config.max_bytes > out.fixed.bytes ? config.max_bytes - out.fixed.bytes : 0,
      config.max_chunk_entries > out.fixed.chunk_entries ? config.max_chunk_entries - out.fixed.chunk_entries : 0};
  auto plan = dedupd::xetcache::plan_eviction(evictable, policy, ctx.now_wall);
  std::map<std::string, std::uint64_t> evicting;
  out.left = plan.before;
  for (std::size_t i : plan.evict) {
    const auto& d = evictable[i];
    auto since = ep.evicting.find(d.path);
    const std::uint64_t wanted_since = since != ep.evicting.end() ? since->second : ctx.now_mono;
    const FileFacts facts = file_facts(ctx.index, d.path);
    dedupd::xetcache::DeletionFacts df;
    df.indexed_unchanged = facts.state == FileState::taken && facts.unchanged;
    df.removed_by_admin = facts.state == FileState::removed;
    df.now_mono = ctx.now_mono;
    df.wanted_since_mono = wanted_since;
    df.grace_seconds = ctx.grace_s();
    const auto decision = dedupd::xetcache::may_delete(df, ctx.liveness);
    if (!decision.allowed) {
      if (df.indexed_unchanged) evicting[d.path] = wanted_since;
      continue;
    }
    const int err = ctx.files.unlink(d.path);
    if (err != 0 && err != ENOENT) {
      ctx.hold_back(ep, d.path, "cannot evict: " + std::string(std::strerror(err)));
      continue;
    }
    if (err == 0) {
      ++ep.status.evicted;
      out.deleted = true;
      ep.holds_removed.erase(d.path);  // the status names no file that is gone
      if (ctx.dry_steps != nullptr)
        ctx.dry_steps->push_back(
            {"evict", {d.path}, "over the cache's caps; " + decision.why, d.size, d.chunk_entries});
      else spdlog::info("xet cache: deleted {} (over the cache's caps; {})", d.path, decision.why);
    }
    --out.left.files;
    out.left.bytes -= d.size;
    out.left.chunk_entries -= d.chunk_entries;
  }
  ep.evicting = std::move(evicting);
  return out;
}

}  // namespace dedupd::daemon::xetcache
