#include "daemon/xetcache/steward.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <sstream>

#include <spdlog/spdlog.h>

#include "daemon/log/logging.hpp"
#include "xetcache/evict.hpp"
#include "xetcache/layout.hpp"
#include "xetcache/merge.hpp"
#include "xetcache/plan.hpp"
#include "xetcache/shards.hpp"

namespace dedupd::daemon {

namespace fs = std::filesystem;

namespace {

// "xet_20261124T044239620+0000_8006.log": the process's start, UTC, to the
// millisecond, and its pid. Nullopt for other names.
struct ClientLog {
  std::int64_t started = 0;  // unix s
  pid_t pid = 0;
};

std::optional<ClientLog> parse_client_log(std::string_view name) {
  constexpr std::string_view kPrefix = "xet_", kSuffix = ".log";
  if (!name.starts_with(kPrefix) || !name.ends_with(kSuffix)) return std::nullopt;
  name.remove_prefix(kPrefix.size());
  name.remove_suffix(kSuffix.size());
  const auto underscore = name.rfind('_');
  if (underscore == std::string_view::npos || name.size() < 15) return std::nullopt;
  ClientLog log;
  const std::string_view pid = name.substr(underscore + 1);
  if (std::from_chars(pid.data(), pid.data() + pid.size(), log.pid).ec != std::errc{} || log.pid <= 0)
    return std::nullopt;
  std::tm tm{};
  const std::string stamp(name.substr(0, 15));  // 20261124T044239
  std::istringstream in(stamp);
  in >> std::get_time(&tm, "%Y%m%dT%H%M%S");
  if (in.fail()) return std::nullopt;
  log.started = std::int64_t(::timegm(&tm));
  return log;
}

// The boot time (unix s) from /proc/stat, read once: it does not change.
std::int64_t boot_time() {
  static const std::int64_t btime = [] {
    std::ifstream boot("/proc/stat");
    std::string key;
    std::int64_t t = -1;
    while (boot >> key)
      if (key == "btime" && boot >> t) break;
    return t;
  }();
  return btime;
}

// When `pid` started (unix s), from /proc; nullopt when it cannot be read.
std::optional<std::int64_t> process_start(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return std::nullopt;
  const auto close = line.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(line.substr(close + 2));
  std::string field;
  // Field 22 of /proc/<pid>/stat is the start time in clock ticks after
  // boot; the state (field 3) is the first after the name.
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i != 22) continue;
    const std::int64_t btime = boot_time();
    std::uint64_t ticks = 0;
    const long hz = ::sysconf(_SC_CLK_TCK);
    if (btime < 0 || hz <= 0 || std::from_chars(field.data(), field.data() + field.size(), ticks).ec != std::errc{})
      return std::nullopt;
    return btime + std::int64_t(ticks / std::uint64_t(hz));
  }
  return std::nullopt;
}

}  // namespace

std::vector<pid_t> live_xet_clients(const fs::path& cache_root) {
  std::vector<pid_t> out;
  std::error_code ec;
  fs::directory_iterator it(cache_root / "logs", ec);
  if (ec) return out;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    auto log = parse_client_log(it->path().filename().native());
    if (!log) continue;
    // EPERM: alive, and another user's (the client's user, usually).
    if (::kill(log->pid, 0) != 0 && errno != EPERM) continue;
    auto started = process_start(log->pid);
    // A pid reused by a later process is not that client. Two seconds of
    // slack: the log is named once logging starts, after the process.
    if (started && *started > log->started + 2) continue;
    out.push_back(log->pid);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void CacheSteward::configure(std::vector<fs::path> roots, const XetCacheConfig& config) {
  roots_ = std::move(roots);
  config_ = config;
}

bool CacheSteward::indexed_unchanged(const std::string& path) const {
  auto source = index_.source(path);
  if (!source || !*source || (*source)->rejected) return false;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  const std::int64_t mtime_ns = std::int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  return std::uint64_t(st.st_size) == (*source)->size && mtime_ns == (*source)->mtime_ns;
}

bool CacheSteward::delete_indexed(const std::string& path, const char* why) {
  if (!indexed_unchanged(path)) {
    spdlog::info("xet cache: keeping {}: not the file dedupd indexed", path);
    return false;
  }
  if (::unlink(path.c_str()) != 0) {
    if (errno != ENOENT) spdlog::warn("xet cache: cannot delete {}: {}", path, std::strerror(errno));
    return false;
  }
  spdlog::info("xet cache: deleted {} ({})", path, why);
  return true;
}

bool CacheSteward::run(std::uint64_t now) {
  bool changed = false;
  std::set<std::string> seen;
  for (const auto& root : roots_) {
    auto endpoints = xetcache::discover(root.native());
    if (!endpoints) {
      spdlog::warn("xet cache {}: {}", root, endpoints.error());
      continue;
    }
    const std::size_t live = live_xet_clients(root).size();
    for (const auto& e : *endpoints) {
      if (e.shard_cache.empty()) continue;
      seen.insert(e.dir);
      try {
        changed |= run_endpoint(e.dir, e.shard_cache, now, live);
      } catch (const std::exception& ex) {
        // One cache's trouble never stops the daemon or the other caches.
        spdlog::error("xet cache {}: {}", e.dir, ex.what());
      }
    }
  }
  std::erase_if(endpoints_, [&](const auto& kv) { return !seen.contains(kv.first); });
  std::vector<XetCacheStatus> published;
  for (const auto& [dir, st] : endpoints_) published.push_back(st.status);
  std::lock_guard lock(status_mu_);
  published_ = std::move(published);
  return changed;
}

bool CacheSteward::run_endpoint(const std::string& dir, const std::string& shard_cache, std::uint64_t now,
                                std::size_t live_clients) {
  EndpointState& ep = endpoints_[dir];
  XetCacheStatus& st = ep.status;
  st.endpoint = dir;
  st.max_bytes = config_.max_bytes;
  st.max_chunk_entries = config_.max_chunk_entries;
  st.live_clients = live_clients;
  st.last_pass = now;
  bool changed = false;

  // 1. A merge's originals go once no client process can still read them:
  // a session that loaded one reopens it to extend a match, and without it
  // re-uploads those bytes (it never fails: tests/xet_client). After the
  // grace they go anyway.
  std::erase_if(ep.pending, [&](const Pending& p) {
    if (!fs::exists(p.path)) return true;
    const bool grace_over = now >= p.replaced_at + std::uint64_t(config_.replaced_grace.count());
    if (live_clients != 0 && !grace_over) return false;
    if (delete_indexed(p.path, "merged into another shard")) {
      ++st.merged_away;
      changed = true;
    }
    return true;  // deleted, or not ours to delete
  });
  std::set<std::string> pending_paths;
  for (const auto& p : ep.pending) pending_paths.insert(p.path);

  auto files = xetcache::list_shard_files(shard_cache);
  if (!files) {
    spdlog::warn("xet cache {}: {}", shard_cache, files.error());
    return changed;
  }
  // Only what dedupd took, unchanged; not originals already replaced.
  std::vector<xetcache::ShardFile> ours;
  for (const auto& f : *files)
    if (!pending_paths.contains(f.path) && indexed_unchanged(f.path)) ours.push_back(f);
  std::map<std::string, Described> described;
  for (const auto& f : ours) {
    auto known = ep.described.find(f.path);
    if (known != ep.described.end() && known->second.size == f.size && known->second.mtime_ns == f.mtime_ns) {
      described.insert(ep.described.extract(known));
      continue;
    }
    auto d = xetcache::describe_file(f);
    if (!d) continue;  // indexed, so it parsed once: changed under us; the next pass sees it again
    described.emplace(f.path, Described{f.size, f.mtime_ns, std::move(*d)});
  }
  ep.described = std::move(described);  // forgets the files that went
  // Recency is the file's modification time (describe_file keeps it), not
  // the access time: every session start reads every shard, so all of them
  // look used, and a merge carries its newest member's time over.
  xetcache::CacheScan scan;
  for (const auto& [path, entry] : ep.described) scan.shards.push_back(entry.desc);
  scan.usage = xetcache::usage_of(scan.shards);

  // 2. Consolidation: one group a pass, so the loop is never held for long.
  auto groups = xetcache::plan_consolidation(scan.shards, xetcache::ConsolidationPolicy{}, now);
  if (!groups.empty()) {
    std::vector<std::string> members;
    for (std::size_t i : groups.front().members) members.push_back(scan.shards[i].path);
    auto merged = xetcache::merge_files(members, shard_cache);
    if (!merged) {
      spdlog::warn("xet cache {}: merging {} shards: {}", shard_cache, members.size(), merged.error());
    } else {
      ++st.merges;
      changed = true;
      spdlog::info("xet cache: merged {} shards into {} ({} bytes, {} chunks, expires {})", members.size(),
                   merged->file.path, merged->file.size, merged->stats.chunks, merged->expiry);
      for (const auto& r : merged->replaced) ep.pending.push_back({r, now});
    }
  }

  // 3. Caps, once no merge is under way (the merged file is indexed when the
  // watcher sees it, and its members are pending until then).
  xetcache::CacheUsage left = scan.usage;
  if (groups.empty()) {
    xetcache::EvictionPolicy policy;
    policy.caps = {config_.max_bytes, config_.max_chunk_entries};
    auto plan = xetcache::plan_eviction(scan.shards, policy, now);
    for (std::size_t i : plan.evict) {
      if (delete_indexed(scan.shards[i].path, "over the cache's caps")) {
        ++st.evicted;
        changed = true;
      }
    }
    if (!plan.evict.empty()) left = plan.after;
  }
  std::uint64_t pending_bytes = 0;
  for (const auto& p : ep.pending) {
    std::error_code ec;
    pending_bytes += fs::file_size(p.path, ec);
  }
  st.files = left.files + ep.pending.size();
  st.bytes = left.bytes + pending_bytes;
  st.chunk_entries = left.chunk_entries;
  st.pending_deletions = ep.pending.size();
  return changed;
}

std::vector<XetCacheStatus> CacheSteward::status() const {
  std::lock_guard lock(status_mu_);
  return published_;
}

}  // namespace dedupd::daemon
