// A pass's second job: the originals of merges go when the rules let them
// (xetcache/rules.hpp). A session that loaded one reopens it to extend a
// match, and without it re-uploads those bytes (it never fails:
// tests/xet_client).
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>

#include <spdlog/spdlog.h>

#include "daemon/xetcache/pass_jobs.hpp"
#include "shard/reader.hpp"

namespace dedupd::daemon::xetcache {

namespace {

// The merged file is there, is what its name says and parses.
bool merged_verifies(StewardFiles& files, const std::string& path) {
  auto bytes = files.read(path);
  if (!bytes) return false;
  if (!shard::ShardView::parse(*bytes)) return false;
  const std::string name = std::filesystem::path(path).filename().native();
  return name == shard::shard_file_hash(*bytes).to_string() + ".mdb";
}

}  // namespace

Replaced delete_replaced(const PassContext& ctx, EndpointState& ep, const Inventory& inventory) {
  Replaced out;
  core::XetCacheStatus& st = ep.status;
  // A member an admin removed after its merge: the merged file holds its
  // content, so that merge counts as undone. Its other originals stay and
  // may merge again without the removed one (so removing the merged shard
  // loses nothing of theirs); the status asks the admin for that removal.
  for (const auto& p : ep.pending)
    if (file_facts(ctx.index, p.original).state == FileState::removed) ep.holds_removed[p.merged] = p.original;
  std::erase_if(ep.pending, [&](const PendingDeletion& p) { return ep.holds_removed.contains(p.merged); });
  std::erase_if(ep.holds_removed, [&](const auto& kv) {
    return !inventory.on_disk.contains(kv.first) || file_facts(ctx.index, kv.first).state != FileState::taken;
  });
  auto count_gone = [&](const std::string& path) {
    auto d = ep.described.find(path);
    if (d == ep.described.end()) return;
    ++out.gone.files;
    out.gone.bytes += d->second.desc.size;
    out.gone.chunk_entries += d->second.desc.chunk_entries;
    ep.described.erase(d);  // neither a candidate nor counted any more
  };
  std::map<std::string, bool> merged_ok;  // read and checked once a pass, and only before a deletion
  auto merged_gone = [&](const PendingDeletion& p) {
    // The merged file went or does not verify: the original is an ordinary
    // member again, and may be merged anew.
    spdlog::warn("xet cache: keeping {}: its merged file {} is missing or does not verify", p.original, p.merged);
    return true;
  };
  std::erase_if(ep.pending, [&](const PendingDeletion& p) {
    if (!inventory.on_disk.contains(p.original)) return true;  // gone already
    if (!inventory.on_disk.contains(p.merged)) return merged_gone(p);
    const FileFacts facts = file_facts(ctx.index, p.original);
    dedupd::xetcache::DeletionFacts df;
    df.indexed_unchanged = facts.state != FileState::not_ours && facts.unchanged;
    df.removed_by_admin = facts.state == FileState::removed;
    df.is_merge_original = true;
    df.merged_verifies = true;
    df.now_mono = ctx.now_mono;
    df.wanted_since_mono = p.since_mono;
    df.grace_seconds = ctx.grace_s();
    const auto decision = dedupd::xetcache::may_delete(df, ctx.liveness);
    if (!df.indexed_unchanged || df.removed_by_admin) {
      spdlog::info("xet cache: keeping {}: {}", p.original, decision.why);
      return true;  // not ours to delete, ever
    }
    if (!decision.allowed || ep.held_back.holds(p.original, ctx.now_mono)) return false;
    // Read through right before the deletion: it must verify now, not when
    // it was written (64 MiB at most, and only when something is to go).
    auto ok = merged_ok.find(p.merged);
    if (ok == merged_ok.end()) ok = merged_ok.emplace(p.merged, merged_verifies(ctx.files, p.merged)).first;
    if (!ok->second) return merged_gone(p);
    const int err = ctx.files.unlink(p.original);
    if (err == 0 || err == ENOENT) {
      if (ctx.dry_steps != nullptr) {
        auto d = ep.described.find(p.original);
        ctx.dry_steps->push_back({"delete",
                                  {p.original},
                                  "merged into " + p.merged + "; " + decision.why,
                                  d != ep.described.end() ? d->second.desc.size : 0,
                                  d != ep.described.end() ? d->second.desc.chunk_entries : 0});
      }
      count_gone(p.original);
      if (err == 0) {
        ++st.merged_away;
        out.deleted = true;
        if (ctx.dry_steps == nullptr)
          spdlog::info("xet cache: deleted {} (merged into {}; {})", p.original, p.merged, decision.why);
      }
      return true;
    }
    ctx.hold_back(ep, p.original, "cannot delete: " + std::string(std::strerror(err)));
    return false;  // tried again next pass; it stays covered by its merge meanwhile
  });
  return out;
}

Coverage coverage_of(const EndpointState& ep) {
  Coverage c;
  for (const auto& p : ep.pending) {
    c.covered.insert(p.original);
    c.merge_targets.insert(p.merged);
    auto d = ep.described.find(p.original);
    if (d == ep.described.end()) continue;
    ++c.pending.files;
    c.pending.bytes += d->second.desc.size;
    c.pending.chunk_entries += d->second.desc.chunk_entries;
  }
  return c;
}

}  // namespace dedupd::daemon::xetcache
