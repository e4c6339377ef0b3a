// The Daemon's side of what its socket asks (daemon/core/operations.hpp):
// status and the values of the live configuration for any thread, and the
// admin actions, which run on the work loop's thread, each through the part
// it concerns. Reload is the Daemon's own, handed in.
#pragma once

#include <chrono>
#include <functional>

#include "daemon/core/index_health_board.hpp"
#include "daemon/core/operations.hpp"
#include "daemon/supervisor/live_config.hpp"
#include "daemon/supervisor/parts.hpp"

namespace dedupd::daemon::supervisor {

class DaemonOperations final : public core::Operations {
 public:
  using Reload = std::function<base::Result<core::ReloadResult>()>;

  DaemonOperations(const LiveConfig& config, Parts& parts, index::Index& index, core::Counters& counters,
                   watch::Watcher& watcher, const learn::LearnedCopies& learned_copies,
                   const core::IndexHealthBoard& health, Reload reload);

  // ---- any thread -------------------------------------------------------------
  core::StatusInfo status() const override;
  core::GlobalDedupKey global_dedup_key() const override;
  core::XetDownloadSettings xet_download_settings() const override;
  std::chrono::milliseconds admin_timeout() const override;
  bool index_rebuilding() const override { return health_.rebuilding(); }
  std::optional<std::vector<core::XetCachePlan>> xet_cache_plan(const std::string& root) override;
  bool fleet_enabled() const override;
  bool fleet_set_aside(const shard::Hash& shard, const std::optional<std::string>& cas) const override;
  fleet::ConnectOptions fleet_options() const override;
  std::optional<fleet_link::PublisherState> fleet_state() const override;
  base::Result<std::uint64_t> fleet_retry() override;

  // ---- the work loop's thread -------------------------------------------------
  core::RescanResult rescan() override;
  base::Result<core::ReloadResult> reload_config() override { return reload_(); }
  base::Result<core::IndexHealth> rebuild_index() override { return parts_.rebuild.soon(); }
  base::Result<core::PurgeResult> purge(bool dry_run) override { return parts_.expiry.purge(dry_run); }
  base::Result<index::RemoveOutcome> remove(const shard::Hash& shard) override;
  base::Result<std::optional<index::ShardInfo>> restore(const shard::Hash& shard) override;
  core::UploadResult ingest_upload(const std::vector<std::uint8_t>& bytes, const std::string& name) override;

 private:
  const LiveConfig& config_;
  Parts& parts_;
  index::Index& index_;
  core::Counters& counters_;
  watch::Watcher& watcher_;
  const learn::LearnedCopies& learned_copies_;
  const core::IndexHealthBoard& health_;
  const Reload reload_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

}  // namespace dedupd::daemon::supervisor
