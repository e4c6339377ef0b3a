#include "daemon/expiry/runner.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "daemon/log/logging.hpp"

namespace dedupd::daemon::expiry {

namespace {

// An index failure, with what the runner was doing.
base::Error failed(const char* what, base::Error e) {
  e.message = std::string(what) + ": " + e.message;
  return e;
}

ShardRecord to_record(const index::ShardInfo& s) {
  return ShardRecord{s.hash, s.state == index::ShardState::live, s.expiry, s.created.value_or(0), s.paths};
}

}  // namespace

base::Result<std::vector<ShardRecord>> Runner::expired_records(std::vector<shard::Hash> also_due) const {
  auto expired = index_.shards(index::ShardState::expired);
  if (!expired) return failed("listing expired shards", expired.error());
  std::vector<ShardRecord> out;
  for (const auto& s : *expired) out.push_back(to_record(s));
  // A dry run treats what is due now as if it had expired already.
  for (const auto& h : also_due) {
    auto s = index_.shard(h);
    if (!s) return failed("reading a shard record", s.error());
    if (!*s) continue;
    auto r = to_record(**s);
    r.live = false;
    out.push_back(std::move(r));
  }
  return out;
}

base::Result<core::PurgeResult> Runner::run(std::uint64_t now, bool dry_run) {
  core::PurgeResult out;
  if (dry_run) {
    auto due = index_.due(now);
    if (!due) return failed("listing due shards", due.error());
    out.expired = std::move(due).value();
  } else {
    auto expired = index_.expire(now);
    if (!expired) return failed("expiring shards", expired.error());
    out.expired = std::move(expired).value();
    for (const auto& h : out.expired) {
      counters_.shards_expired++;
      spdlog::info("shard {} expired; its entries left the index", h);
    }
  }

  auto records = expired_records(dry_run ? out.expired : std::vector<shard::Hash>{});
  if (!records) return records.error();
  for (const auto& f : files_past_grace(*records, now, config_.delete_after))
    if (delete_file(f.shard, f.path, dry_run)) out.deleted_files.push_back(f.path);

  if (config_.max_bytes) {
    if (auto capped = enforce_cap(now, dry_run, out); !capped) return capped.error();
  }
  if (!dry_run) next_deletion_ = next_deletion(*records, now, config_.delete_after);
  return out;
}

bool Runner::delete_file(const shard::Hash& shard, const std::string& path, bool dry_run) {
  if (!watcher_.inside_roots(path)) {
    spdlog::debug("keeping {}: not inside a watched directory", path);
    return false;
  }
  // Only the very file the index read: same path, same shard, same size and
  // mtime. A file replaced since then is somebody else's.
  auto source = index_.source(path);
  if (!source || !*source || (*source)->rejected || (*source)->shard != shard) return false;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT && !dry_run) (void)index_.forget_source(path);  // gone already
    return false;
  }
  std::int64_t mtime_ns = std::int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  if (!S_ISREG(st.st_mode) || std::uint64_t(st.st_size) != (*source)->size || mtime_ns != (*source)->mtime_ns) {
    spdlog::info("keeping {}: it changed since shard {} was read from it", path, shard);
    return false;
  }
  if (dry_run) return true;
  if (::unlink(path.c_str()) != 0) {
    spdlog::warn("cannot delete {} (shard {}): {}", path, shard, std::strerror(errno));
    return false;
  }
  counters_.files_deleted++;
  spdlog::info("deleted {} (shard {}, expired)", path, shard);
  if (auto st2 = index_.forget_source(path); !st2) spdlog::warn("cannot forget {} in the index: {}", path, st2.error());
  return true;
}

base::Result<std::monostate> Runner::enforce_cap(std::uint64_t now, bool dry_run, core::PurgeResult& out) {
  std::vector<index::ShardInfo> shards;
  for (auto state : {index::ShardState::live, index::ShardState::expired}) {
    auto listed = index_.shards(state);
    if (!listed) return failed("listing shards", listed.error());
    for (auto& s : *listed)
      if (s.expiry) shards.push_back(std::move(s));
  }

  std::vector<ShardBytes> sizes;
  for (const auto& s : shards) {
    std::uint64_t bytes = 0;
    for (const auto& p : s.paths) {
      struct stat st {};
      if (watcher_.inside_roots(p) && ::lstat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode))
        bytes += std::uint64_t(st.st_size);
    }
    sizes.push_back({s.hash, s.created.value_or(0), s.expiry, bytes});
  }
  for (const auto& h : evictions_for_cap(std::move(sizes), *config_.max_bytes)) {
    auto it = std::find_if(shards.begin(), shards.end(), [&](const auto& s) { return s.hash == h; });
    spdlog::info("shard {}: over expiry.max_bytes, evicting (oldest first)", h);
    if (it->state == index::ShardState::live && !dry_run) {
      auto r = index_.remove(h, now);
      if (!r) return failed("removing a shard over the size cap", r.error());
      if (r->outcome == index::RemoveOutcome::removed) counters_.shards_removed++;
    }
    if (it->state == index::ShardState::live) out.expired.push_back(h);
    for (const auto& p : it->paths)
      if (delete_file(h, p, dry_run)) out.deleted_files.push_back(p);
  }
  return std::monostate{};
}

std::optional<std::uint64_t> Runner::next_due(std::uint64_t) const {
  std::optional<std::uint64_t> next;
  if (auto e = index_.next_expiry(); e && *e) next = **e;
  if (next_deletion_ && (!next || *next_deletion_ < *next)) next = next_deletion_;
  return next;
}

}  // namespace dedupd::daemon::expiry
