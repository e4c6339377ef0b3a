// A pass's third job: consolidation, one group a pass so a pass is never
// long; a group that fails is held back and the next one is tried. The
// merged file is written in the client's own layout and naming
// (xetcache/merge); its originals become pending deletions, journaled at
// once.
#include <algorithm>

#include <spdlog/spdlog.h>

#include "daemon/xetcache/pass_jobs.hpp"
#include "shard/reader.hpp"
#include "xetcache/merge.hpp"

namespace dedupd::daemon::xetcache {

namespace {

// The merged file's size and chunk entries against its members', for a dry run.
core::XetCachePlanStep merge_step(const EndpointState& ep, const std::vector<std::string>& members,
                                  const dedupd::xetcache::WrittenShard& written,
                                  const dedupd::xetcache::MergedShard& merged) {
  core::XetCachePlanStep step{"merge", members, "", 0, 0};
  std::uint64_t bytes = 0, entries = 0;
  for (const auto& m : members)
    if (auto d = ep.described.find(m); d != ep.described.end()) {
      bytes += d->second.desc.size;
      entries += d->second.desc.chunk_entries;
    }
  step.why = std::to_string(members.size()) + " small shards of one kind, key and expiry day into " + written.path;
  step.bytes_saved = bytes > written.size ? bytes - written.size : 0;
  step.entries_saved = entries > merged.stats.chunks ? entries - merged.stats.chunks : 0;
  return step;
}

// True when it wrote a new file; the members are pending deletions once the
// merged file is there (written now, or already).
bool try_merge(const PassContext& ctx, EndpointState& ep, const std::string& shard_cache,
               const std::vector<std::string>& members) {
  std::vector<std::vector<std::uint8_t>> contents;
  std::vector<shard::ShardView> views;
  contents.reserve(members.size());
  std::int64_t newest_mtime_ns = 0;
  for (const auto& path : members) {
    auto bytes = ctx.files.read(path);
    ctx.progress();
    if (!bytes) {
      // This file's trouble, not the group's: the group is planned again without it.
      ctx.hold_back(ep, path, bytes.error().to_string());
      return false;
    }
    contents.push_back(std::move(*bytes));
    auto d = ep.described.find(path);
    if (d != ep.described.end()) newest_mtime_ns = std::max(newest_mtime_ns, d->second.mtime_ns);
  }
  for (std::size_t i = 0; i < members.size(); ++i) {
    auto v = shard::ShardView::parse(contents[i]);
    if (!v) {
      ctx.hold_back(ep, members[i], members[i] + ": " + v.error().to_string());
      return false;
    }
    views.push_back(*v);
  }
  const std::string key = group_key(members);
  auto merged = dedupd::xetcache::merge_views(views);
  if (!merged) {
    ctx.hold_back(ep, key, merged.error().to_string());
    return false;
  }
  auto written = ctx.files.write_shard(shard_cache, merged->bytes, 0644, newest_mtime_ns);
  if (!written) {
    ctx.hold_back(ep, key, written.error().to_string());
    return false;
  }
  ep.held_back.forget(key);
  if (!written->existed) ++ep.status.merges;
  if (ctx.dry_steps != nullptr) {
    ctx.dry_steps->push_back(merge_step(ep, members, *written, *merged));
  } else {
    spdlog::info("xet cache: merged {} shards into {} ({} bytes, {} chunks, expires {}){}", members.size(),
                 written->path, written->size, merged->stats.chunks, merged->expiry,
                 written->existed ? ", already there" : "");
  }
  for (const auto& member : members) {
    if (member == written->path) continue;  // the merge reproduced it: it is the result
    ep.pending.push_back({member, written->path, ctx.now_mono});
  }
  ctx.journal();
  return !written->existed;
}

}  // namespace

bool merge_one_group(const PassContext& ctx, EndpointState& ep, const std::string& shard_cache, Coverage& coverage,
                     const Inventory& inventory) {
  // Originals covered by a merged file that verifies are not planned again:
  // the merge would only write the same file once more. A merged file
  // holding a removed shard's content is never a member again: a merge with
  // it would carry that content on.
  std::vector<dedupd::xetcache::ShardDesc> candidates;
  for (const auto& [path, entry] : ep.described)
    if (!coverage.covered.contains(path) && !ep.held_back.holds(path, ctx.now_mono) &&
        !ep.holds_removed.contains(path) && !inventory.removed.contains(path))
      candidates.push_back(entry.desc);
  auto groups = dedupd::xetcache::plan_consolidation(
      candidates, dedupd::xetcache::policy_for_cap(ctx.consolidation, ctx.config.max_chunk_entries), ctx.now_wall);
  bool wrote = false;
  for (const auto& g : groups) {
    std::vector<std::string> members;
    for (std::size_t i : g.members) members.push_back(candidates[i].path);
    if (ep.held_back.holds(group_key(members), ctx.now_mono)) continue;
    const std::size_t pending_then = ep.pending.size();
    wrote |= try_merge(ctx, ep, shard_cache, members);
    ctx.progress();
    if (ep.pending.size() != pending_then) {
      for (std::size_t i : g.members) coverage.covered.insert(candidates[i].path);
      break;
    }
  }
  return wrote;
}

}  // namespace dedupd::daemon::xetcache
