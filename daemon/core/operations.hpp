// What the daemon does when its socket asks: the admin actions and the
// values derived from the live configuration. The supervisor implements it
// (daemon/supervisor/daemon_operations.hpp); the service behind the socket
// (daemon/wiring/) is handed it, so the API side never sees the Daemon
// class and the core never sees the API.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "daemon/core/errors.hpp"
#include "daemon/core/status.hpp"
#include "fleet/fleet.hpp"
#include "index/index.hpp"
#include "shard/hash.hpp"

// A value of the fleet's room (daemon/fleet_link/state.hpp), named, not
// included: the core includes no room of the daemon.
namespace dedupd::daemon::fleet_link {
struct PublisherState;
}

namespace dedupd::daemon::core {

class Operations {
 public:
  virtual ~Operations() = default;

  // ---- any thread -------------------------------------------------------------
  virtual StatusInfo status() const = 0;
  virtual GlobalDedupKey global_dedup_key() const = 0;
  virtual XetDownloadSettings xet_download_settings() const { return {}; }
  // How long an admin call waits for the work loop (limits.request_timeout,
  // which a reload changes).
  virtual std::chrono::milliseconds admin_timeout() const = 0;
  // True while a damaged index, moved aside, is rebuilt from the shards:
  // answers say so (a "not found" may be a shard not taken in yet).
  virtual bool index_rebuilding() const { return false; }
  // The steward's next pass as a dry run; nullopt while a pass runs.
  virtual std::optional<std::vector<XetCachePlan>> xet_cache_plan(const std::string& root) = 0;
  // The fleet: nullopt / "daemon.no_fleet" without one.
  virtual bool fleet_enabled() const = 0;
  virtual fleet::ConnectOptions fleet_options() const = 0;
  virtual std::optional<fleet_link::PublisherState> fleet_state() const = 0;
  virtual base::Result<std::uint64_t> fleet_retry() = 0;
  // Marked set aside in the fleet for `cas` (any CAS: nullopt), as the
  // publisher last read the marks.
  virtual bool fleet_set_aside(const shard::Hash&, const std::optional<std::string>&) const { return false; }

  // ---- the work loop's thread only (post them with EventLoop::call) -----------
  virtual RescanResult rescan() = 0;
  // The config file read again and applied (as SIGHUP); "daemon.bad_config"
  // with every error when it is wrong, the running one kept.
  virtual base::Result<ReloadResult> reload_config() { return seam_error(kRuleInternal, "not supported"); }
  // Moves the index aside and rebuilds it from the shards (dedupd starts
  // again in its process); when it will happen, or why not.
  virtual base::Result<IndexHealth> rebuild_index() { return seam_error(kRuleInternal, "not supported"); }
  virtual base::Result<PurgeResult> purge(bool dry_run) = 0;
  virtual base::Result<index::RemoveOutcome> remove(const shard::Hash& shard) = 0;
  virtual base::Result<std::optional<index::ShardInfo>> restore(const shard::Hash& shard) = 0;
  virtual UploadResult ingest_upload(const std::vector<std::uint8_t>& bytes, const std::string& name) = 0;
};

}  // namespace dedupd::daemon::core
