// A pass's first job over an endpoint: what is in its shard-cache/ and what
// the index says of each file.
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "daemon/xetcache/pass_jobs.hpp"
#include "shard/reader.hpp"

namespace dedupd::daemon::xetcache {

FileFacts file_facts(const index::Index& index, const std::string& path) {
  FileFacts f;
  auto source = index.source(path);
  if (!source || !*source || (*source)->rejected) return f;
  auto shard = index.shard((*source)->shard);
  if (!shard || !*shard) return f;
  if ((*shard)->state == index::ShardState::removed) f.state = FileState::removed;
  else f.state = FileState::taken;  // live, or expired (never merged: the plan leaves expired shards out)
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return f;
  const std::int64_t mtime_ns = std::int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  f.unchanged = std::uint64_t(st.st_size) == (*source)->size && mtime_ns == (*source)->mtime_ns;
  return f;
}

dedupd::xetcache::CacheUsage usage_of(const std::map<std::string, DescribedFile>& described) {
  dedupd::xetcache::CacheUsage u;
  for (const auto& [path, d] : described) {
    ++u.files;
    u.bytes += d.desc.size;
    u.chunk_entries += d.desc.chunk_entries;
  }
  return u;
}

namespace {

// A temporary of dedupd's own is a merge killed before its rename (this
// steward holds the cache's lock and runs one pass at a time, so no merge
// of any dedupd is writing one now). Its originals were never journaled:
// they stay, and the merge is planned again. Left, each kill would leave up
// to 64 MiB the client never loads and nothing else removes.
void remove_merge_leftovers(StewardFiles& files, const std::string& shard_cache) {
  auto temps = dedupd::xetcache::list_steward_temps(shard_cache);
  if (!temps) return;
  for (const auto& t : *temps) {
    const int err = files.unlink(t.path);
    if (err == 0) spdlog::info("xet cache: removed {} ({} bytes), left by a merge that did not finish", t.path, t.size);
    else if (err != ENOENT)
      spdlog::warn("xet cache: cannot remove {}, left by a merge that did not finish: {}", t.path, std::strerror(err));
  }
}

}  // namespace

Inventory take_inventory(const PassContext& ctx, EndpointState& ep, const std::string& shard_cache,
                         const std::vector<dedupd::xetcache::ShardFile>& files) {
  if (ctx.dry_steps == nullptr) remove_merge_leftovers(ctx.files, shard_cache);
  // Only what dedupd took (live or expired shards), unchanged. Files of shards an
  // admin removed are left alone: never merged (a merged file would be
  // indexed and published again) and never deleted. The client still loads
  // them, so they are described and count against the caps as files that
  // cannot go.
  Inventory inv;
  std::vector<dedupd::xetcache::ShardFile> ours;
  ep.status.removed_kept = 0;
  for (const auto& f : files) {
    inv.on_disk.insert(f.path);
    const FileFacts facts = file_facts(ctx.index, f.path);
    if (facts.state == FileState::removed) {
      ++ep.status.removed_kept;
      inv.removed.insert(f.path);
      ours.push_back(f);
    }
    if (facts.state == FileState::taken && facts.unchanged) ours.push_back(f);
  }
  std::map<std::string, DescribedFile> described;
  for (const auto& f : ours) {
    auto known = ep.described.find(f.path);
    if (known != ep.described.end() && known->second.size == f.size && known->second.mtime_ns == f.mtime_ns) {
      described.insert(ep.described.extract(known));
      continue;
    }
    if (ep.held_back.holds(f.path, ctx.now_mono)) continue;
    auto bytes = ctx.files.read(f.path);
    ctx.progress();
    if (!bytes) {
      ctx.hold_back(ep, f.path, bytes.error().to_string());
      continue;
    }
    auto view = shard::ShardView::parse(*bytes);
    if (!view) {
      ctx.hold_back(ep, f.path, f.path + ": " + view.error().to_string());
      continue;
    }
    dedupd::xetcache::ShardDesc d = dedupd::xetcache::describe(*view, f.path);
    d.last_used = std::uint64_t(f.mtime_ns / 1'000'000'000);
    described.emplace(f.path, DescribedFile{f.size, f.mtime_ns, std::move(d)});
    ep.held_back.forget(f.path);
  }
  ep.described = std::move(described);  // forgets the files that went
  return inv;
}

}  // namespace dedupd::daemon::xetcache
