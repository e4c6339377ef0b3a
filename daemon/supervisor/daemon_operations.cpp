#include "daemon/supervisor/daemon_operations.hpp"

#include <unistd.h>

#include <spdlog/spdlog.h>

#include <filesystem>

#include "daemon/config/xet_endpoint.hpp"
#include "daemon/core/clock.hpp"
#include "daemon/log/logging.hpp"

#ifndef DEDUPD_VERSION
#define DEDUPD_VERSION "0.0.0"
#endif

namespace dedupd::daemon::supervisor {

namespace fs = std::filesystem;

DaemonOperations::DaemonOperations(const LiveConfig& config, Parts& parts, index::Index& index,
                                   core::Counters& counters, watch::Watcher& watcher,
                                   const learn::LearnedCopies& learned_copies, const core::IndexHealthBoard& health,
                                   Reload reload)
    : config_(config),
      parts_(parts),
      index_(index),
      counters_(counters),
      watcher_(watcher),
      learned_copies_(learned_copies),
      health_(health),
      reload_(std::move(reload)) {}

core::StatusInfo DaemonOperations::status() const {
  core::StatusInfo s;
  s.version = DEDUPD_VERSION;
  s.pid = ::getpid();
  s.uptime_s = std::uint64_t(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started_).count());
  const fs::path endpoint_config = config_.read([&](const config::Config& c) {
    s.socket = c.socket.native();
    s.state_dir = c.state_dir.native();
    for (const auto& w : c.watch) s.watch.push_back(w.path.native());
    return c.xet_endpoint.config;
  });
  s.index_health = health_.get();
  for (const auto& c : learned_copies_.all()) {
    std::error_code size_ec;
    ++s.index_health.learned_copies;
    s.index_health.learned_copies_bytes += fs::file_size(c.path, size_ec);
  }
  s.waiting = parts_.queue.waiting_status(core::unix_now());
  s.state_dir_space = parts_.queue.state_dir_space();
  s.xet_caches = parts_.steward.status();
  if (!endpoint_config.empty() || parts_.learner.stats().listening) {
    core::XetDownloadStatus d;
    d.enabled = xet_download_settings().enabled;
    d.counts = parts_.learner.download_counts();
    if (auto cache = parts_.download_cache.status()) d.cache = std::move(*cache);
    s.xet_downloads = std::move(d);
  }
  if (!endpoint_config.empty()) {
    // Read at each status, outside the lock: it follows the file as the
    // endpoint's reload does, without a restart of dedupd.
    const config::XetEndpointSettings e = config::read_xet_endpoint_settings(endpoint_config);
    s.xet_endpoint = core::XetEndpointStatus{endpoint_config.native(), e.present,  e.problem, e.hub_upstream,
                                             e.cas_upstream,           e.hub_port, e.cas_port};
  }
  return s;
}

core::GlobalDedupKey DaemonOperations::global_dedup_key() const {
  core::GlobalDedupKey k;
  k.key = parts_.keys.current();
  config_.read([&](const config::Config& c) {
    k.reply_lifetime_s = std::uint64_t(c.global_dedup.reply_expiry.count());
    k.endpoint_reply_lifetime_s = std::uint64_t(c.xet_endpoint.reply_expiry.count());
    k.reply_max_xorbs = c.global_dedup.reply_max_xorbs;
    k.reply_max_bytes = c.global_dedup.reply_max_bytes;
    k.unknown_cas_answers = c.xet_endpoint.unknown_cas_answers;
  });
  return k;
}

core::XetDownloadSettings DaemonOperations::xet_download_settings() const {
  return config_.read([](const config::Config& c) {
    return core::XetDownloadSettings{c.xet_endpoint.downloads.enabled,
                                     std::uint64_t(c.xet_endpoint.downloads.max_url_lifetime.count())};
  });
}

std::chrono::milliseconds DaemonOperations::admin_timeout() const {
  return config_.read([](const config::Config& c) { return c.limits.request_timeout; });
}

std::optional<std::vector<core::XetCachePlan>> DaemonOperations::xet_cache_plan(const std::string& root) {
  return parts_.steward.plan(root);
}

bool DaemonOperations::fleet_enabled() const {
  return config_.read([](const config::Config& c) { return c.fleet.enabled(); });
}

bool DaemonOperations::fleet_set_aside(const shard::Hash& shard, const std::optional<std::string>& cas) const {
  return parts_.fleet.set_aside(shard, cas);
}

fleet::ConnectOptions DaemonOperations::fleet_options() const {
  return config_.read([](const config::Config& c) { return jobs::fleet_connect_options(c); });
}

std::optional<fleet_link::PublisherState> DaemonOperations::fleet_state() const { return parts_.fleet.state(); }

base::Result<std::uint64_t> DaemonOperations::fleet_retry() { return parts_.fleet.retry_parked(); }

core::RescanResult DaemonOperations::rescan() {
  counters_.rescans++;
  return parts_.queue.ingest_now(watcher_.scan());
}

base::Result<index::RemoveOutcome> DaemonOperations::remove(const shard::Hash& shard) {
  auto r = index_.remove(shard, core::unix_now());
  if (!r) {
    base::Error e = r.error();
    e.message = "removing shard " + shard.to_string() + ": " + e.message;
    return e;
  }
  if (r->outcome != index::RemoveOutcome::removed) return r->outcome;
  counters_.shards_removed++;
  spdlog::info("shard {} removed on request", shard);
  parts_.expiry.reschedule();
  return r->outcome;
}

base::Result<std::optional<index::ShardInfo>> DaemonOperations::restore(const shard::Hash& shard) {
  auto r = index_.restore(shard);
  if (r && *r) spdlog::info("shard {} restored: it answers global-dedup queries again", shard.to_string());
  // Everywhere: its fleet marks go, and every host's copy answers again.
  if (r) parts_.fleet.restored(shard);
  return r;
}

core::UploadResult DaemonOperations::ingest_upload(const std::vector<std::uint8_t>& bytes, const std::string& name) {
  core::UploadResult r = parts_.ingester.ingest_upload(bytes, name, core::unix_now());
  parts_.expiry.reschedule();
  return r;
}

}  // namespace dedupd::daemon::supervisor
