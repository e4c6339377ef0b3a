// The steward's pass and its worker: which roots and endpoints a pass
// visits, and over each endpoint the jobs of pass_jobs.hpp in their order.
#include "daemon/xetcache/steward.hpp"

#include <set>

#include <spdlog/spdlog.h>

#include "daemon/log/logging.hpp"
#include "daemon/xetcache/journal.hpp"
#include "daemon/xetcache/pass_jobs.hpp"

namespace dedupd::daemon::xetcache {

namespace fs = std::filesystem;

CacheSteward::CacheSteward(const index::Index& index, StewardOptions options, StewardProbes probes)
    : index_(index), options_(std::move(options)), probes_(probes) {}

CacheSteward::~CacheSteward() { stop(); }

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

void CacheSteward::configure(std::vector<fs::path> roots, const config::XetCacheConfig& config) {
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
  // A root no longer managed: its lock goes, and another dedupd may take it now.
  std::erase_if(locks_, [&](const auto& kv) { return !keep.contains(kv.first); });
  std::erase_if(sightings_, [&](const auto& kv) { return !keep.contains(kv.first); });
}

void CacheSteward::load_journal() {
  journal_loaded_ = true;
  if (options_.state_dir.empty()) return;
  // The wait starts again: monotonic time does not survive a reboot, and
  // starting over errs on the side of the clients.
  const std::uint64_t now = probes_.clock->monotonic_s();
  const auto lines = read_pending_journal(options_.state_dir);
  for (const auto& l : lines) endpoints_[l.endpoint].pending.push_back({l.original, l.merged, now});
  if (!lines.empty()) spdlog::info("xet cache: {} pending deletions from the journal, checked again", lines.size());
}

void CacheSteward::save_journal() {
  if (dry_run_) return;
  journal_dirty_ = false;
  if (options_.state_dir.empty()) return;
  std::vector<JournalLine> lines;
  for (const auto& [dir, ep] : endpoints_)
    for (const auto& p : ep.pending) lines.push_back({dir, p.merged, p.original});
  if (!write_pending_journal(options_.state_dir, lines)) journal_dirty_ = true;
}

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

namespace {

core::XetCacheStatus root_status(const fs::path& root) {
  core::XetCacheStatus st;
  st.endpoint = root.native();
  return st;
}

}  // namespace

bool CacheSteward::run_roots() {
  bool changed = false;
  std::set<std::string> seen;
  std::vector<core::XetCacheStatus> standing_by;
  // What is known of a root's endpoints is kept (pending deletions stay
  // journaled) while nothing there is touched.
  auto keep_endpoints_of = [&](const fs::path& root) {
    for (auto& [dir, ep] : endpoints_)
      if (dir.starts_with(root.native())) seen.insert(dir);
  };
  for (const auto& root : roots_) {
    std::error_code ec;
    if (!fs::is_directory(root, ec)) {
      core::XetCacheStatus st = root_status(root);
      st.problem = "not a directory";
      standing_by.push_back(std::move(st));
      continue;
    }
    CacheLock& lock = locks_[root.native()];
    if (!lock.take(root)) {
      keep_endpoints_of(root);
      core::XetCacheStatus st = root_status(root);
      st.standing_by = true;
      st.lock_holder = lock.holder();
      standing_by.push_back(std::move(st));
      continue;
    }
    ClientSightings& clients = sightings_[root.native()];
    judge_clients(root, *probes_.clock, *probes_.processes, *probes_.files, clients);
    auto endpoints = dedupd::xetcache::discover(root.native());
    if (!endpoints) {
      spdlog::warn("xet cache {}: {}", root, endpoints.error());
      core::XetCacheStatus st = root_status(root);
      st.problem = endpoints.error().to_string();
      standing_by.push_back(std::move(st));
      keep_endpoints_of(root);
      continue;
    }
    for (const auto& e : *endpoints) {
      seen.insert(e.dir);
      std::optional<dedupd::xetcache::Error> problem;
      for (const auto& p : e.problems) {
        // A session dir that cannot be read stops nothing here: the steward
        // never touches session dirs. Only an unlistable shard-cache/ matters.
        if (!e.shard_cache.empty() && p.message.starts_with(e.shard_cache + ":")) problem = p;
        else spdlog::debug("xet cache {}: {}", e.dir, p);
      }
      if (e.shard_cache.empty() && !problem) continue;
      try {
        changed |= run_endpoint(clients, e.dir, e.shard_cache, problem);
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
  std::vector<core::XetCacheStatus> published = std::move(standing_by);
  for (const auto& [dir, st] : endpoints_) published.push_back(st.status);
  if (dry_run_) {
    dry_published_ = std::move(published);
    return changed;
  }
  std::lock_guard lock(status_mu_);
  published_ = std::move(published);
  return changed;
}

bool CacheSteward::run_endpoint(ClientSightings& clients, const std::string& dir, const std::string& shard_cache,
                                std::optional<dedupd::xetcache::Error> layout_problem) {
  EndpointState& ep = endpoints_[dir];
  const PassContext ctx{
      .index = index_,
      .files = *probes_.files,
      .config = config_,
      .consolidation = options_.consolidation,
      .backoff = {options_.backoff_base_s, options_.backoff_max_s},
      .liveness = clients.liveness,
      .now_mono = probes_.clock->monotonic_s(),
      .now_wall = probes_.clock->wall_s(),
      .dry_steps = dry_run_ ? &dry_steps_[dir] : nullptr,
      .progress = [this] { progress(); },
      .journal =
          [this] {
            journal_dirty_ = true;
            save_journal();
          },
  };
  begin_endpoint_status(ep.status, dir, config_, clients.liveness, clients.clients, ctx.now_wall);
  if (layout_problem) {
    ep.status.problem = layout_problem->to_string();
    return false;
  }
  auto files = dedupd::xetcache::list_shard_files(shard_cache);
  if (!files) {
    ep.status.problem = files.error().to_string();
    return false;
  }
  const Inventory inventory = take_inventory(ctx, ep, shard_cache, *files);
  const dedupd::xetcache::CacheUsage before = usage_of(ep.described);
  ep.status.files_before = before.files;
  ep.status.bytes_before = before.bytes;

  const std::size_t pending_before = ep.pending.size();
  const Replaced replaced = delete_replaced(ctx, ep, inventory);
  if (ep.pending.size() != pending_before) journal_dirty_ = true;
  Coverage coverage = coverage_of(ep);
  const bool merged = merge_one_group(ctx, ep, shard_cache, coverage, inventory);
  const Eviction eviction = evict_to_caps(ctx, ep, before, replaced.gone, coverage, inventory);
  end_endpoint_status(ep, eviction, coverage, ctx.now_mono);
  return replaced.deleted || merged || eviction.deleted;
}

}  // namespace dedupd::daemon::xetcache
