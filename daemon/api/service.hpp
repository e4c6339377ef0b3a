// The seam between the HTTP API and the rest of the daemon: its status and
// its admin actions, in the daemon's own types (daemon/core/status.hpp). Lookups
// are not here: they are answered by the answer layer (daemon/answers/) from
// the Sources this hands out. Routes read the index directly for listings
// and stats (LMDB readers never wait for the writer). The running daemon
// implements it (daemon/wiring/service_impl.hpp). Admin methods are called
// from HTTP worker threads and block until the daemon's work loop has done
// the job, so the index keeps exactly one writer.
// Failures are values: a base::Error whose rule ("daemon.*" in
// daemon/core/errors.hpp, "index.*", "fleet.*") the HTTP layer answers with
// its status (daemon/api/render/failure.hpp); nothing here throws.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daemon/answers/download_faults.hpp"
#include "daemon/answers/download_grants.hpp"
#include "daemon/answers/download_objects.hpp"
#include "daemon/answers/sources.hpp"
#include "daemon/core/errors.hpp"
#include "daemon/core/status.hpp"
#include "daemon/fleet_link/state.hpp"
#include "fleet/fleet.hpp"
#include "index/index.hpp"
#include "shard/hash.hpp"

namespace dedupd::daemon::api {

class Service {
 public:
  virtual ~Service() = default;

  // The open index, or nullptr while it is not open yet (routes answer 503).
  // The pointer stays valid until the ApiServer is stopped.
  virtual const index::Index* index() const = 0;

  virtual core::StatusInfo status() const = 0;
  // While a damaged index is rebuilt every answer carries
  // "X-Dedupd-Index: rebuilding": a "not found" may be wrong until it ends.
  virtual bool index_rebuilding() const { return false; }
  virtual core::DaemonCounters counters() const = 0;
  // What lookups are answered from: the index, the global-dedup key, the
  // fleet. Lives as long as the Service.
  virtual answers::Sources& answers() = 0;

  // The learning path of the local Xet endpoint (daemon/learn/): a mirrored
  // shard body, held until the CAS's status for it; and its counts.
  virtual core::LearnHold learn_hold(const std::string& request_id, const std::string& cas,
                                     std::vector<std::uint8_t> bytes) {
    (void)request_id, (void)cas, (void)bytes;
    return {};
  }
  virtual core::LearnStats learn_stats() const { return {}; }
  // xet_endpoint.downloads as it runs (a reload changes it).
  virtual core::XetDownloadSettings xet_download_settings() const { return {}; }
  // The range URLs of the endpoint's downloads (docs/XET-ENDPOINT.md,
  // "Downloads"); nullptr when there is no key to sign them with, and the
  // endpoint passes the CAS's answers on as they came.
  virtual answers::DownloadGrants* download_grants() { return nullptr; }
  // The download cache's objects dedupd has checked; nullptr as above.
  virtual answers::DownloadObjects* download_objects() { return nullptr; }
  // What the grant and fill answers refused or failed, by reason.
  virtual answers::DownloadFaults* download_faults() { return nullptr; }

  // Admin actions; block until the work loop has finished them, or until the
  // admin timeout ("daemon.busy").
  [[nodiscard]] virtual base::Result<core::RescanResult> rescan() = 0;
  // POST /v1/admin/reload.
  [[nodiscard]] virtual base::Result<core::ReloadResult> reload() {
    return base::Error{"daemon.internal", 0, "not supported", false};
  }
  // POST /v1/admin/index/rebuild: the index moved aside and rebuilt.
  [[nodiscard]] virtual base::Result<core::IndexHealth> rebuild_index() {
    return base::Error{"daemon.internal", 0, "not supported", false};
  }
  [[nodiscard]] virtual base::Result<core::PurgeResult> purge(bool dry_run) = 0;
  // POST /v1/admin/restore/<hash>: the shard after; nullopt: not known.
  [[nodiscard]] virtual base::Result<std::optional<index::ShardInfo>> restore(const shard::Hash& shard) {
    (void)shard;
    return std::optional<index::ShardInfo>();
  }
  // DELETE /v1/shard/<hash>; not_live: known, but already removed or expired.
  [[nodiscard]] virtual base::Result<index::RemoveOutcome> remove(const shard::Hash& shard) = 0;
  // `name` is the uploaded file's name (?name=), possibly empty; it tells a
  // bundle (".caf") from a shard and names the source in logs and records.
  // A shard that fails validation is an error with the parser's rule and
  // offset; the daemon's own failures carry their "daemon."/"index." rule.
  [[nodiscard]] virtual core::UploadResult ingest(std::vector<std::uint8_t> bytes, std::string name) = 0;

  // The next pass of the Xet cache steward as a dry run over the caches
  // under `root` (all when empty); nullopt while a pass is under way.
  virtual std::optional<std::vector<core::XetCachePlan>> xet_cache_plan(const std::string& root) {
    (void)root;
    return std::vector<core::XetCachePlan>{};
  }

  // ---- the fleet (daemon/fleet_link/): what a daemon without one answers ----------
  // The publisher's state; nullopt without a fleet.
  virtual std::optional<fleet_link::PublisherState> fleet_state() const { return std::nullopt; }
  // The whole fleet as the database sees it (a longer bound: an operator
  // asks). "daemon.no_fleet" without a fleet; "fleet.*" when it is out of reach.
  [[nodiscard]] virtual base::Result<fleet::Status> fleet_status() {
    return core::seam_error(core::kRuleNoFleet, "no fleet configured");
  }
  // Admin: drops every hold of a host that is gone for good. True when the
  // host was known; "fleet.*" when the primary cannot be reached.
  // Queues every parked outbox entry again; how many. "daemon.no_fleet"
  // without a fleet.
  [[nodiscard]] virtual base::Result<std::uint64_t> fleet_retry() {
    return core::seam_error(core::kRuleNoFleet, "no fleet configured");
  }
  [[nodiscard]] virtual base::Result<bool> fleet_forget_host(const std::string& name) {
    (void)name;
    return core::seam_error(core::kRuleNoFleet, "no fleet configured");
  }
};

}  // namespace dedupd::daemon::api
