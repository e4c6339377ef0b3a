#include "daemon/xetcache/steward.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
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

// In each managed root: held (flock, exclusive) by the one dedupd stewarding
// it; it says who that is.
constexpr const char* kStewardLockName = ".dedupd-xet-cache.lock";
// In the state dir: the pending deletions, one "endpoint\tmerged\toriginal" a line.
constexpr const char* kStewardJournalName = "xet-cache-pending";

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

// The file layer of a dry run: reads for real, writes and deletes nothing.
class DryRunFiles final : public StewardFiles {
 public:
  explicit DryRunFiles(StewardFiles& real) : real_(real) {}
  Listing list_logs(const std::string& dir) override { return real_.list_logs(dir); }
  std::optional<std::string> network_fs(const std::string& path) override { return real_.network_fs(path); }
  shard::Result<std::vector<std::uint8_t>> read(const std::string& path) override { return real_.read(path); }
  shard::Result<xetcache::WrittenShard> write_shard(const std::string& dir, std::span<const std::uint8_t> bytes, mode_t,
                                                    std::int64_t) override {
    xetcache::WrittenShard w;
    w.hash = shard::shard_file_hash(bytes);
    w.size = bytes.size();
    w.path = dir + "/" + w.hash.to_string() + ".mdb";
    return w;
  }
  int unlink(const std::string&) override { return 0; }
  bool log_dest_redirected() override { return real_.log_dest_redirected(); }

 private:
  StewardFiles& real_;
};

std::string group_key(const std::vector<std::string>& members) {
  std::string key = "group:";
  for (const auto& m : members) key += m + ";";
  return key;
}

}  // namespace

CacheSteward::CacheSteward(const index::Index& index, StewardOptions options, StewardProbes probes)
    : index_(index), options_(std::move(options)), probes_(probes) {}

CacheSteward::~CacheSteward() {
  stop();
  for (auto& [root, st] : root_states_)
    if (st.lock_fd >= 0) ::close(st.lock_fd);
}

namespace {
// Thrown by progress() when a stop is asked: unwinds a pass to run(). Not a
// std::exception, so the per-endpoint handlers let it through.
struct StewardPassStopped {};
}  // namespace

void CacheSteward::progress() {
  ++files_read_;
  if (stop_) throw StewardPassStopped{};
}

void CacheSteward::stop() {
  stop_ = true;
  if (worker_.joinable()) worker_.join();
  stop_ = false;  // for a pass started later
}

bool CacheSteward::start_pass() {
  if (running_) return false;
  if (worker_.joinable()) worker_.join();  // the last pass, ended
  running_ = true;
  worker_ = std::thread([this] {
    try {
      run();
    } catch (const std::exception& e) {
      spdlog::error("xet cache: the pass failed: {}", e.what());
    }
    running_ = false;
  });
  return true;
}

void CacheSteward::configure(std::vector<fs::path> roots, const XetCacheConfig& config) {
  std::lock_guard lock(config_mu_);
  any_ = !roots.empty();
  next_roots_ = std::move(roots);
  next_config_ = config;
  reconfigured_ = true;
}

void CacheSteward::apply_configuration() {
  {
    std::lock_guard lock(config_mu_);
    if (!reconfigured_) return;
    reconfigured_ = false;
    roots_ = next_roots_;
    config_ = next_config_;
  }
  std::set<std::string> keep;
  for (const auto& r : roots_) keep.insert(r.native());
  for (auto it = root_states_.begin(); it != root_states_.end();) {
    if (keep.contains(it->first)) {
      ++it;
      continue;
    }
    if (it->second.lock_fd >= 0) ::close(it->second.lock_fd);  // another dedupd may take it now
    it = root_states_.erase(it);
  }
}

// ---- one steward per cache ---------------------------------------------------

bool CacheSteward::take_lock(const fs::path& root, RootState& st) {
  if (st.holds_lock) return true;
  const std::string path = (root / kStewardLockName).native();
  if (st.lock_fd < 0) {
    st.lock_fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (st.lock_fd < 0) {
      // Not lockable, not ours to manage: a second steward could not be ruled out.
      st.lock_holder = std::string("cannot open the lock file: ") + std::strerror(errno);
      return false;
    }
  }
  if (::flock(st.lock_fd, LOCK_EX | LOCK_NB) != 0) {
    char who[256] = {};
    const ssize_t n = ::pread(st.lock_fd, who, sizeof who - 1, 0);
    std::string holder = n > 0 ? std::string(who, std::size_t(n)) : std::string("another process");
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == '\0')) holder.pop_back();
    if (holder != st.lock_holder) spdlog::warn("xet cache {}: standing by, {} stewards it", root, holder);
    st.lock_holder = holder;
    return false;
  }
  const std::string me = "pid " + std::to_string(::getpid()) + " on " + host_name() + "\n";
  if (::ftruncate(st.lock_fd, 0) != 0 || ::pwrite(st.lock_fd, me.data(), me.size(), 0) != ssize_t(me.size()))
    spdlog::debug("xet cache {}: could not write who holds the lock: {}", root, std::strerror(errno));
  st.holds_lock = true;
  st.lock_holder.clear();
  return true;
}

// ---- which clients are alive -------------------------------------------------

void CacheSteward::judge_clients(const fs::path& root, RootState& st) {
  xetcache::LivenessFacts facts;
  st.clients.clear();
  const auto listing = probes_.files->list_logs((root / "logs").native());
  using Logs = xetcache::LivenessFacts::Logs;
  if (listing.err == ENOENT || listing.err == ENOTDIR) facts.logs = Logs::missing;
  else if (listing.err == EACCES || listing.err == EPERM) facts.logs = Logs::denied;
  else if (listing.err != 0) facts.logs = Logs::unreadable;
  if (listing.err != 0) facts.logs_error = std::strerror(listing.err);
  facts.network_fs = probes_.files->network_fs(root.native());
  facts.foreign_pid_namespace = probes_.processes->foreign_pid_namespace();
  facts.log_dest_redirected = probes_.files->log_dest_redirected();
  const auto boot = probes_.processes->boot_clock();
  const std::uint64_t wall = probes_.clock->wall_s();
  std::map<std::string, std::uint64_t> sighted;
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> marks;
  std::set<std::string> ever_running;
  for (const auto& entry : listing.entries) {
    auto log = xetcache::parse_client_log_name(entry.name);
    if (!log) continue;
    ++facts.client_logs;
    marks[entry.name] = {entry.mtime_s, entry.size};
    if (st.ever_running.contains(entry.name)) ever_running.insert(entry.name);
    const ProcessStart p = probes_.processes->process(log->pid);
    if (!p.running) {
      // An ended client this steward saw running is no mystery; any other
      // log still being written is someone it cannot see.
      if (ever_running.contains(entry.name)) continue;
      auto before = st.log_marks.find(entry.name);
      const std::uint64_t age = wall > entry.mtime_s ? wall - entry.mtime_s : entry.mtime_s - wall;
      const bool growing =
          before != st.log_marks.end() ? before->second != marks[entry.name] : age <= xetcache::kRecentLogSeconds;
      if (growing) ++facts.recent_unmatched_logs;
      continue;
    }
    bool alive = true;  // unless the pid is proven to be another process's
    if (p.start_ticks) {
      auto seen = st.sighted.find(entry.name);
      if (seen != st.sighted.end()) alive = seen->second == *p.start_ticks;
      else if (boot) alive = xetcache::may_be_logged_client(*log, *p.start_ticks, *boot);
      if (alive) sighted[entry.name] = *p.start_ticks;
    }
    if (!alive) continue;
    ++facts.alive_clients;
    ever_running.insert(entry.name);
    st.clients.push_back(log->pid);
  }
  st.sighted = std::move(sighted);
  st.log_marks = std::move(marks);
  st.ever_running = std::move(ever_running);
  std::sort(st.clients.begin(), st.clients.end());
  st.clients.erase(std::unique(st.clients.begin(), st.clients.end()), st.clients.end());
  facts.alive_clients = st.clients.size();
  auto verdict = xetcache::judge_liveness(facts);
  if (verdict.established != st.liveness.established || verdict.why != st.liveness.why) {
    if (verdict.established) spdlog::info("xet cache {}: {}", root, verdict.why);
    else spdlog::warn("xet cache {}: liveness unknown: {}; originals stay until replaced_grace", root, verdict.why);
  }
  st.liveness = std::move(verdict);
}

// ---- what the index says of a file -------------------------------------------

CacheSteward::FileFacts CacheSteward::facts_of(const std::string& path) const {
  FileFacts f;
  auto source = index_.source(path);
  if (!source || !*source || (*source)->rejected) return f;
  auto shard = index_.shard((*source)->shard);
  if (!shard || !*shard) return f;
  if ((*shard)->state == index::ShardState::removed) f.state = FileState::removed;
  else f.state = FileState::taken;  // live, or expired (never merged: the plan leaves expired shards out)
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return f;
  const std::int64_t mtime_ns = std::int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  f.unchanged = std::uint64_t(st.st_size) == (*source)->size && mtime_ns == (*source)->mtime_ns;
  return f;
}

bool CacheSteward::merged_verifies(const std::string& path) {
  auto bytes = probes_.files->read(path);
  if (!bytes) return false;
  if (!shard::ShardView::parse(*bytes)) return false;
  const std::string name = fs::path(path).filename().native();
  return name == shard::shard_file_hash(*bytes).to_string() + ".mdb";
}

// ---- failure isolation -------------------------------------------------------

void CacheSteward::set_aside(EndpointState& ep, const std::string& key, std::string reason, std::uint64_t now_mono) {
  SetAside& s = ep.set_aside[key];
  ++s.failures;
  s.until_mono = now_mono + xetcache::backoff_seconds(s.failures, options_.backoff_base_s, options_.backoff_max_s);
  s.reason = std::move(reason);
  spdlog::warn("xet cache: set aside {} for {} s: {}", key, s.until_mono - now_mono, s.reason);
}

bool CacheSteward::is_set_aside(const EndpointState& ep, const std::string& key, std::uint64_t now_mono) const {
  auto it = ep.set_aside.find(key);
  return it != ep.set_aside.end() && now_mono < it->second.until_mono;
}

// ---- the journal of pending deletions ----------------------------------------

void CacheSteward::load_journal() {
  journal_loaded_ = true;
  if (options_.state_dir.empty()) return;
  std::ifstream in(options_.state_dir + "/" + kStewardJournalName);
  std::string line;
  const std::uint64_t now = probes_.clock->monotonic_s();
  std::size_t loaded = 0;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string endpoint, merged, original;
    if (!std::getline(fields, endpoint, '\t') || !std::getline(fields, merged, '\t') || !std::getline(fields, original))
      continue;
    // The wait starts again: monotonic time does not survive a reboot, and
    // starting over errs on the side of the clients.
    endpoints_[endpoint].pending.push_back({original, merged, now});
    ++loaded;
  }
  if (loaded != 0) spdlog::info("xet cache: {} pending deletions from the journal, checked again", loaded);
}

void CacheSteward::save_journal() {
  if (dry_run_) return;
  journal_dirty_ = false;
  if (options_.state_dir.empty()) return;
  const std::string path = options_.state_dir + "/" + kStewardJournalName;
  const std::string temp = path + ".tmp";
  std::string text;
  for (const auto& [dir, ep] : endpoints_)
    for (const auto& p : ep.pending) text += dir + "\t" + p.merged + "\t" + p.original + "\n";
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  bool ok = fd >= 0;
  if (ok) ok = ::write(fd, text.data(), text.size()) == ssize_t(text.size()) && ::fsync(fd) == 0;
  if (fd >= 0 && ::close(fd) != 0) ok = false;
  if (ok) ok = ::rename(temp.c_str(), path.c_str()) == 0;
  if (ok) {
    const int dfd = ::open(options_.state_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ok = ::fsync(dfd) == 0;
      ::close(dfd);
    }
  }
  if (!ok) {
    // The deletions then wait in memory only: a restart forgets them and
    // the originals are merged again, never deleted without the check.
    spdlog::warn("xet cache: cannot write the journal {}: {}", path, std::strerror(errno));
    ::unlink(temp.c_str());
    journal_dirty_ = true;
  }
}

// ---- a pass --------------------------------------------------------------------

bool CacheSteward::run() {
  std::lock_guard pass(run_mu_);
  files_read_ = 0;
  apply_configuration();
  if (!journal_loaded_) load_journal();
  bool changed = false;
  try {
    changed = run_roots();
  } catch (const StewardPassStopped&) {
    spdlog::info("xet cache: pass stopped");
    if (journal_dirty_) save_journal();
  }
  return changed;
}

bool CacheSteward::run_roots() {
  bool changed = false;
  std::set<std::string> seen;
  std::vector<XetCacheStatus> standing_by;
  for (const auto& root : roots_) {
    RootState& rs = root_states_[root.native()];
    std::error_code ec;
    if (!fs::is_directory(root, ec)) {
      XetCacheStatus st;
      st.endpoint = root.native();
      st.problem = "not a directory";
      standing_by.push_back(std::move(st));
      continue;
    }
    if (!take_lock(root, rs)) {
      // Keep what is known of its endpoints (pending deletions stay journaled)
      // but touch nothing.
      for (auto& [dir, ep] : endpoints_)
        if (dir.starts_with(root.native())) seen.insert(dir);
      XetCacheStatus st;
      st.endpoint = root.native();
      st.standing_by = true;
      st.lock_holder = rs.lock_holder;
      standing_by.push_back(std::move(st));
      continue;
    }
    judge_clients(root, rs);
    auto endpoints = xetcache::discover(root.native());
    if (!endpoints) {
      spdlog::warn("xet cache {}: {}", root, endpoints.error());
      XetCacheStatus st;
      st.endpoint = root.native();
      st.problem = endpoints.error().to_string();
      standing_by.push_back(std::move(st));
      for (auto& [dir, ep] : endpoints_)
        if (dir.starts_with(root.native())) seen.insert(dir);
      continue;
    }
    for (const auto& e : *endpoints) {
      seen.insert(e.dir);
      std::optional<xetcache::Error> problem;
      for (const auto& p : e.problems) {
        // A session dir that cannot be read stops nothing here: the steward
        // never touches session dirs. Only an unlistable shard-cache/ matters.
        if (!e.shard_cache.empty() && p.message.starts_with(e.shard_cache + ":")) problem = p;
        else spdlog::debug("xet cache {}: {}", e.dir, p);
      }
      if (e.shard_cache.empty() && !problem) continue;
      try {
        changed |= run_endpoint(rs, e.dir, e.shard_cache, problem);
      } catch (const std::exception& ex) {
        // One cache's trouble never stops the daemon or the other caches.
        spdlog::error("xet cache {}: {}", e.dir, ex.what());
        endpoints_[e.dir].status.problem = ex.what();
      }
      progress();
    }
  }
  std::erase_if(endpoints_, [&](const auto& kv) { return !seen.contains(kv.first); });
  if (journal_dirty_) save_journal();
  std::vector<XetCacheStatus> published = std::move(standing_by);
  for (const auto& [dir, st] : endpoints_) published.push_back(st.status);
  if (dry_run_) {
    dry_published_ = std::move(published);
    return changed;
  }
  std::lock_guard lock(status_mu_);
  published_ = std::move(published);
  return changed;
}

bool CacheSteward::try_merge(EndpointState& ep, const std::string& shard_cache, const std::vector<std::string>& members,
                             std::uint64_t now_mono) {
  std::vector<std::vector<std::uint8_t>> contents;
  std::vector<shard::ShardView> views;
  contents.reserve(members.size());
  std::int64_t newest_mtime_ns = 0;
  for (const auto& path : members) {
    auto bytes = probes_.files->read(path);
    progress();
    if (!bytes) {
      // This file's trouble, not the group's: the group is planned again without it.
      set_aside(ep, path, bytes.error().to_string(), now_mono);
      return false;
    }
    contents.push_back(std::move(*bytes));
    auto d = ep.described.find(path);
    if (d != ep.described.end()) newest_mtime_ns = std::max(newest_mtime_ns, d->second.mtime_ns);
  }
  for (std::size_t i = 0; i < members.size(); ++i) {
    auto v = shard::ShardView::parse(contents[i]);
    if (!v) {
      set_aside(ep, members[i], members[i] + ": " + v.error().to_string(), now_mono);
      return false;
    }
    views.push_back(*v);
  }
  const std::string key = group_key(members);
  auto merged = xetcache::merge_views(views);
  if (!merged) {
    set_aside(ep, key, merged.error().to_string(), now_mono);
    return false;
  }
  auto written = probes_.files->write_shard(shard_cache, merged->bytes, 0644, newest_mtime_ns);
  if (!written) {
    set_aside(ep, key, written.error().to_string(), now_mono);
    return false;
  }
  ep.set_aside.erase(key);
  if (!written->existed) ++ep.status.merges;
  if (dry_run_) {
    XetCachePlanStep step{"merge", members, "", 0, 0};
    std::uint64_t bytes = 0, entries = 0;
    for (const auto& m : members)
      if (auto d = ep.described.find(m); d != ep.described.end()) {
        bytes += d->second.desc.size;
        entries += d->second.desc.chunk_entries;
      }
    step.why = std::to_string(members.size()) + " small shards of one kind, key and expiry day into " + written->path;
    step.bytes_saved = bytes > written->size ? bytes - written->size : 0;
    step.entries_saved = entries > merged->stats.chunks ? entries - merged->stats.chunks : 0;
    dry_steps_[ep.status.endpoint].push_back(std::move(step));
  } else {
    spdlog::info("xet cache: merged {} shards into {} ({} bytes, {} chunks, expires {}){}", members.size(),
                 written->path, written->size, merged->stats.chunks, merged->expiry,
                 written->existed ? ", already there" : "");
  }
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (members[i] == written->path) continue;  // the merge reproduced it: it is the result
    ep.pending.push_back({members[i], written->path, now_mono});
  }
  journal_dirty_ = true;
  save_journal();
  return !written->existed;
}

bool CacheSteward::run_endpoint(RootState& root, const std::string& dir, const std::string& shard_cache,
                                std::optional<xetcache::Error> layout_problem) {
  EndpointState& ep = endpoints_[dir];
  XetCacheStatus& st = ep.status;
  const std::uint64_t now_mono = probes_.clock->monotonic_s();
  const std::uint64_t now_wall = probes_.clock->wall_s();
  const auto grace = std::uint64_t(config_.replaced_grace.count());
  st.endpoint = dir;
  st.max_bytes = config_.max_bytes;
  st.max_chunk_entries = config_.max_chunk_entries;
  st.max_chunk_entries_why = config_.max_chunk_entries_source == CapSource::xet_endpoint ? "xet_endpoint"
                             : config_.max_chunk_entries_source == CapSource::configured ? "configured"
                                                                                         : "client_default";
  st.live_clients = root.liveness.alive_clients;
  st.client_pids = root.clients;
  st.liveness_established = root.liveness.established;
  st.liveness_why = root.liveness.why;
  st.standing_by = false;
  st.lock_holder.clear();
  st.last_pass = now_wall;
  st.problem.clear();
  if (layout_problem) {
    st.problem = layout_problem->to_string();
    return false;
  }
  bool changed = false;

  auto files = xetcache::list_shard_files(shard_cache);
  if (!files) {
    st.problem = files.error().to_string();
    return false;
  }
  // A temporary of dedupd's own is a merge killed before its rename (this
  // steward holds the cache's lock and runs one pass at a time, so no merge
  // of any dedupd is writing one now). Its originals were never journaled:
  // they stay, and the merge is planned again below. Left, each kill would
  // leave up to 64 MiB the client never loads and nothing else removes.
  if (auto temps = xetcache::list_steward_temps(shard_cache); temps && !dry_run_) {
    for (const auto& t : *temps) {
      const int err = probes_.files->unlink(t.path);
      if (err == 0)
        spdlog::info("xet cache: removed {} ({} bytes), left by a merge that did not finish", t.path, t.size);
      else if (err != ENOENT)
        spdlog::warn("xet cache: cannot remove {}, left by a merge that did not finish: {}", t.path,
                     std::strerror(err));
    }
  }
  // Only what dedupd took (live or expired shards), unchanged. Files of shards an
  // admin removed are left alone: never merged (a merged file would be
  // indexed and published again) and never deleted. The client still loads
  // them, so they are described and count against the caps as files that
  // cannot go.
  std::vector<xetcache::ShardFile> ours;
  std::set<std::string> on_disk, removed_files;
  st.removed_kept = 0;
  for (const auto& f : *files) {
    on_disk.insert(f.path);
    const FileFacts facts = facts_of(f.path);
    if (facts.state == FileState::removed) {
      ++st.removed_kept;
      removed_files.insert(f.path);
      ours.push_back(f);
    }
    if (facts.state == FileState::taken && facts.unchanged) ours.push_back(f);
  }
  std::map<std::string, Described> described;
  for (const auto& f : ours) {
    auto known = ep.described.find(f.path);
    if (known != ep.described.end() && known->second.size == f.size && known->second.mtime_ns == f.mtime_ns) {
      described.insert(ep.described.extract(known));
      continue;
    }
    if (is_set_aside(ep, f.path, now_mono)) continue;
    auto bytes = probes_.files->read(f.path);
    progress();
    if (!bytes) {
      set_aside(ep, f.path, bytes.error().to_string(), now_mono);
      continue;
    }
    auto view = shard::ShardView::parse(*bytes);
    if (!view) {
      set_aside(ep, f.path, f.path + ": " + view.error().to_string(), now_mono);
      continue;
    }
    xetcache::ShardDesc d = xetcache::describe(*view, f.path);
    d.last_used = std::uint64_t(f.mtime_ns / 1'000'000'000);
    described.emplace(f.path, Described{f.size, f.mtime_ns, std::move(d)});
    ep.set_aside.erase(f.path);
  }
  ep.described = std::move(described);  // forgets the files that went
  const xetcache::CacheUsage before = [&] {
    xetcache::CacheUsage u;
    for (const auto& [path, d] : ep.described) {
      ++u.files;
      u.bytes += d.desc.size;
      u.chunk_entries += d.desc.chunk_entries;
    }
    return u;
  }();
  st.files_before = before.files;
  st.bytes_before = before.bytes;

  // 1. A merge's originals go when the rules let them (xetcache/rules.hpp):
  // a session that loaded one reopens it to extend a match, and without it
  // re-uploads those bytes (it never fails: tests/xet_client).
  const std::size_t pending_before = ep.pending.size();
  // A member an admin removed after its merge: the merged file holds its
  // content, so that merge counts as undone. Its other originals stay and
  // may merge again without the removed one (so removing the merged shard
  // loses nothing of theirs); the status asks the admin for that removal.
  for (const auto& p : ep.pending)
    if (facts_of(p.original).state == FileState::removed) ep.holds_removed[p.merged] = p.original;
  std::erase_if(ep.pending, [&](const Pending& p) { return ep.holds_removed.contains(p.merged); });
  std::erase_if(ep.holds_removed, [&](const auto& kv) {
    return !on_disk.contains(kv.first) || facts_of(kv.first).state != FileState::taken;
  });
  xetcache::CacheUsage gone;  // of the described files deleted here
  auto count_gone = [&](const std::string& path) {
    auto d = ep.described.find(path);
    if (d == ep.described.end()) return;
    ++gone.files;
    gone.bytes += d->second.desc.size;
    gone.chunk_entries += d->second.desc.chunk_entries;
    ep.described.erase(d);  // neither a candidate nor counted any more
  };
  std::map<std::string, bool> merged_ok;  // read and checked once a pass, and only before a deletion
  auto merged_gone = [&](const Pending& p) {
    // The merged file went or does not verify: the original is an ordinary
    // member again, and may be merged anew.
    spdlog::warn("xet cache: keeping {}: its merged file {} is missing or does not verify", p.original, p.merged);
    return true;
  };
  std::erase_if(ep.pending, [&](const Pending& p) {
    if (!on_disk.contains(p.original)) return true;  // gone already
    if (!on_disk.contains(p.merged)) return merged_gone(p);
    const FileFacts facts = facts_of(p.original);
    xetcache::DeletionFacts df;
    df.indexed_unchanged = facts.state != FileState::not_ours && facts.unchanged;
    df.removed_by_admin = facts.state == FileState::removed;
    df.is_merge_original = true;
    df.merged_verifies = true;
    df.now_mono = now_mono;
    df.wanted_since_mono = p.since_mono;
    df.grace_seconds = grace;
    const auto decision = xetcache::may_delete(df, root.liveness);
    if (!df.indexed_unchanged || df.removed_by_admin) {
      spdlog::info("xet cache: keeping {}: {}", p.original, decision.why);
      return true;  // not ours to delete, ever
    }
    if (!decision.allowed || is_set_aside(ep, p.original, now_mono)) return false;
    // Read through right before the deletion: it must verify now, not when
    // it was written (64 MiB at most, and only when something is to go).
    auto ok = merged_ok.find(p.merged);
    if (ok == merged_ok.end()) ok = merged_ok.emplace(p.merged, merged_verifies(p.merged)).first;
    if (!ok->second) return merged_gone(p);
    const int err = probes_.files->unlink(p.original);
    if (err == 0 || err == ENOENT) {
      if (dry_run_) {
        auto d = ep.described.find(p.original);
        dry_steps_[dir].push_back({"delete",
                                   {p.original},
                                   "merged into " + p.merged + "; " + decision.why,
                                   d != ep.described.end() ? d->second.desc.size : 0,
                                   d != ep.described.end() ? d->second.desc.chunk_entries : 0});
      }
      count_gone(p.original);
      if (err == 0) {
        ++st.merged_away;
        changed = true;
        if (!dry_run_) spdlog::info("xet cache: deleted {} (merged into {}; {})", p.original, p.merged, decision.why);
      }
      return true;
    }
    set_aside(ep, p.original, "cannot delete: " + std::string(std::strerror(err)), now_mono);
    return false;  // tried again next pass; it stays covered by its merge meanwhile
  });
  if (ep.pending.size() != pending_before) journal_dirty_ = true;

  // Originals covered by a merged file that verifies are not planned again:
  // the merge would only write the same file once more.
  std::set<std::string> covered;
  std::set<std::string> merge_targets;
  xetcache::CacheUsage pending_usage;
  for (const auto& p : ep.pending) {
    covered.insert(p.original);
    merge_targets.insert(p.merged);
    auto d = ep.described.find(p.original);
    if (d == ep.described.end()) continue;
    ++pending_usage.files;
    pending_usage.bytes += d->second.desc.size;
    pending_usage.chunk_entries += d->second.desc.chunk_entries;
  }
  std::vector<xetcache::ShardDesc> candidates;
  for (const auto& [path, entry] : ep.described)
    // A merged file holding a removed shard's content is never a member
    // again: a merge with it would carry that content on.
    if (!covered.contains(path) && !is_set_aside(ep, path, now_mono) && !ep.holds_removed.contains(path) &&
        !removed_files.contains(path))
      candidates.push_back(entry.desc);

  // 2. Consolidation: one group a pass, so the loop is never held for long;
  // a group that fails is set aside and the next one is tried.
  auto groups = xetcache::plan_consolidation(
      candidates, xetcache::policy_for_cap(options_.consolidation, config_.max_chunk_entries), now_wall);
  for (const auto& g : groups) {
    std::vector<std::string> members;
    for (std::size_t i : g.members) members.push_back(candidates[i].path);
    if (is_set_aside(ep, group_key(members), now_mono)) continue;
    const std::size_t pending_then = ep.pending.size();
    changed |= try_merge(ep, shard_cache, members, now_mono);
    progress();
    if (ep.pending.size() != pending_then) {
      for (std::size_t i : g.members) covered.insert(candidates[i].path);
      break;
    }
  }

  // 3. Caps, whatever the merges did: pending originals still count (the
  // client loads them until they go), so the room left for the rest is
  // smaller by what they hold. A merged file whose originals wait is not
  // evicted: that would undo the merge and keep both costs meanwhile.
  // A merged file holding a removed shard's content is no merge member, but
  // it is evictable in its turn like any file the steward wrote: kept out,
  // it would hold its room for ever and newer content would go instead.
  std::vector<xetcache::ShardDesc> evictable;
  for (const auto& [path, entry] : ep.described)
    if (!covered.contains(path) && !merge_targets.contains(path) && !is_set_aside(ep, path, now_mono) &&
        !removed_files.contains(path))
      evictable.push_back(entry.desc);
  // Everything the client loads that is not up for eviction takes room first.
  const xetcache::CacheUsage evictable_usage = xetcache::usage_of(evictable);
  xetcache::CacheUsage fixed;
  // Saturating: a miscount must leave more room, never evict everything.
  auto minus = [](std::uint64_t a, std::uint64_t b, std::uint64_t c) { return a > b + c ? a - b - c : 0; };
  fixed.files = minus(before.files, gone.files, evictable_usage.files);
  fixed.bytes = minus(before.bytes, gone.bytes, evictable_usage.bytes);
  fixed.chunk_entries = minus(before.chunk_entries, gone.chunk_entries, evictable_usage.chunk_entries);
  xetcache::EvictionPolicy policy;
  policy.caps = {config_.max_bytes > fixed.bytes ? config_.max_bytes - fixed.bytes : 0,
                 config_.max_chunk_entries > fixed.chunk_entries ? config_.max_chunk_entries - fixed.chunk_entries : 0};
  auto plan = xetcache::plan_eviction(evictable, policy, now_wall);
  std::map<std::string, std::uint64_t> evicting;
  xetcache::CacheUsage left = plan.before;
  for (std::size_t i : plan.evict) {
    const auto& d = evictable[i];
    auto since = ep.evicting.find(d.path);
    const std::uint64_t wanted_since = since != ep.evicting.end() ? since->second : now_mono;
    const FileFacts facts = facts_of(d.path);
    xetcache::DeletionFacts df;
    df.indexed_unchanged = facts.state == FileState::taken && facts.unchanged;
    df.removed_by_admin = facts.state == FileState::removed;
    df.now_mono = now_mono;
    df.wanted_since_mono = wanted_since;
    df.grace_seconds = grace;
    const auto decision = xetcache::may_delete(df, root.liveness);
    if (!decision.allowed) {
      if (df.indexed_unchanged) evicting[d.path] = wanted_since;
      continue;
    }
    const int err = probes_.files->unlink(d.path);
    if (err != 0 && err != ENOENT) {
      set_aside(ep, d.path, "cannot evict: " + std::string(std::strerror(err)), now_mono);
      continue;
    }
    if (err == 0) {
      ++st.evicted;
      changed = true;
      ep.holds_removed.erase(d.path);  // the status names no file that is gone
      if (dry_run_)
        dry_steps_[dir].push_back(
            {"evict", {d.path}, "over the cache's caps; " + decision.why, d.size, d.chunk_entries});
      else spdlog::info("xet cache: deleted {} (over the cache's caps; {})", d.path, decision.why);
    }
    --left.files;
    left.bytes -= d.size;
    left.chunk_entries -= d.chunk_entries;
  }
  ep.evicting = std::move(evicting);
  st.holds_removed.clear();
  for (const auto& [merged, original] : ep.holds_removed)
    st.holds_removed.push_back(merged + " holds the content of " + original +
                               ", which an admin removed: remove that merged shard too");

  // What the client loads now: the rest and what was not up for eviction
  // (a merged file just written is described once indexed, next pass).
  st.files = left.files + fixed.files;
  st.bytes = left.bytes + fixed.bytes;
  st.chunk_entries = left.chunk_entries + fixed.chunk_entries;
  st.pending_deletions = ep.pending.size();
  st.pending_bytes = pending_usage.bytes;
  st.set_aside.clear();
  for (const auto& [key, s] : ep.set_aside)
    if (now_mono < s.until_mono)
      st.set_aside.push_back(key + ": " + s.reason + " (again in " + std::to_string(s.until_mono - now_mono) + " s)");
  return changed;
}

std::vector<XetCacheStatus> CacheSteward::status() const {
  std::lock_guard lock(status_mu_);
  std::vector<XetCacheStatus> out = published_;
  if (out.empty() && running_) {
    // The first pass publishes only when it ends, and over a large cache
    // that is when its progress matters most: the roots, with the pass.
    std::lock_guard config(config_mu_);
    for (const auto& root : next_roots_) {
      XetCacheStatus st;
      st.endpoint = root.native();
      out.push_back(std::move(st));
    }
  }
  for (auto& st : out) {
    st.pass_running = running_;
    st.pass_files_read = files_read_;
  }
  return out;
}

}  // namespace dedupd::daemon

namespace dedupd::daemon {

std::optional<std::vector<XetCachePlan>> CacheSteward::plan(const std::string& root) {
  std::unique_lock pass(run_mu_, std::try_to_lock);
  if (!pass.owns_lock()) return std::nullopt;
  apply_configuration();
  if (!journal_loaded_) load_journal();
  // A dry run is a pass on copies: everything a pass remembers is put back,
  // but the lock it may have taken stays taken (the fd is the one held).
  const auto endpoints = endpoints_;
  auto root_states = root_states_;
  const auto roots = roots_;
  const bool journal_dirty = journal_dirty_;
  DryRunFiles dry(*probes_.files);
  StewardFiles* const real = probes_.files;
  probes_.files = &dry;
  dry_run_ = true;
  auto under = [&](const std::string& path) {
    return root.empty() || path == root || path.starts_with(root + "/") || root.starts_with(path + "/");
  };
  std::erase_if(roots_, [&](const fs::path& r) { return !under(r.native()); });
  try {
    run_roots();
  } catch (const StewardPassStopped&) {
  } catch (const std::exception& e) {
    spdlog::error("xet cache: the dry run failed: {}", e.what());
  }
  std::vector<XetCachePlan> out;
  for (const auto& st : dry_published_) {
    if (!under(st.endpoint)) continue;
    XetCachePlan p;
    p.endpoint = st.endpoint;
    p.liveness_established = st.liveness_established;
    p.liveness_why = st.liveness_why;
    p.standing_by = st.standing_by;
    p.lock_holder = st.lock_holder;
    p.set_aside = st.set_aside;
    if (auto s = dry_steps_.find(st.endpoint); s != dry_steps_.end()) p.steps = std::move(s->second);
    out.push_back(std::move(p));
  }
  for (const auto& [path, st] : root_states_) {
    RootState& kept = root_states[path];
    kept.lock_fd = st.lock_fd;
    kept.holds_lock = st.holds_lock;
    kept.lock_holder = st.lock_holder;
  }
  endpoints_ = endpoints;
  root_states_ = std::move(root_states);
  roots_ = roots;
  journal_dirty_ = journal_dirty;
  probes_.files = real;
  dry_run_ = false;
  dry_steps_.clear();
  dry_published_.clear();
  return out;
}

}  // namespace dedupd::daemon
