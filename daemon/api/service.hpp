// The seam between the HTTP API and the rest of the daemon: what the routes
// need from it, in the daemon's own types (daemon/core/status.hpp). Routes read the
// index directly (LMDB readers never wait for the writer); everything else
// (status, admin actions, the global-dedup key) goes through this interface,
// which the running daemon implements (daemon/wiring/service_impl.hpp). Admin
// methods are called from HTTP worker threads and block until the daemon's
// work loop has done the job, so the index keeps exactly one writer.
// Failures are values: a shard::Error whose rule ("daemon.*" in
// daemon/core/errors.hpp, "index.*", "fleet.*") the HTTP layer answers with
// its status (daemon/api/render/failure.hpp); nothing here throws.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "daemon/core/errors.hpp"
#include "daemon/core/status.hpp"
#include "daemon/fleet/answers.hpp"
#include "daemon/fleet/state.hpp"
#include "index/index.hpp"
#include "shard/cas_scope.hpp"
#include "shard/hash.hpp"

namespace dedupd::daemon {

class Service {
 public:
  virtual ~Service() = default;

  // The open index, or nullptr while it is not open yet (routes answer 503).
  // The pointer stays valid until the ApiServer is stopped.
  virtual const index::Index* index() const = 0;

  virtual StatusInfo status() const = 0;
  // While a damaged index is rebuilt every answer carries
  // "X-Dedupd-Index: rebuilding": a "not found" may be wrong until it ends.
  virtual bool index_rebuilding() const { return false; }
  virtual DaemonCounters counters() const = 0;
  virtual GlobalDedupKey global_dedup_key() const = 0;

  // The learning path of the local Xet endpoint (daemon/learn/): a mirrored
  // shard body, held until the CAS's status for it; and its counts.
  virtual LearnHold learn_hold(const std::string& request_id, const std::string& cas, std::vector<std::uint8_t> bytes) {
    (void)request_id, (void)cas, (void)bytes;
    return {};
  }
  virtual LearnStats learn_stats() const { return {}; }

  // Admin actions; block until the work loop has finished them, or until the
  // admin timeout ("daemon.busy").
  [[nodiscard]] virtual shard::Result<RescanResult> rescan() = 0;
  // POST /v1/admin/reload.
  [[nodiscard]] virtual shard::Result<ReloadResult> reload() {
    return shard::Error{"daemon.internal", 0, "not supported", false};
  }
  // POST /v1/admin/index/rebuild: the index moved aside and rebuilt.
  [[nodiscard]] virtual shard::Result<IndexHealth> rebuild_index() {
    return shard::Error{"daemon.internal", 0, "not supported", false};
  }
  [[nodiscard]] virtual shard::Result<PurgeResult> purge(bool dry_run) = 0;
  // POST /v1/admin/restore/<hash>: the shard after; nullopt: not known.
  [[nodiscard]] virtual shard::Result<std::optional<index::ShardInfo>> restore(const shard::Hash& shard) {
    (void)shard;
    return std::optional<index::ShardInfo>();
  }
  // DELETE /v1/shard/<hash>; not_live: known, but already removed or expired.
  [[nodiscard]] virtual shard::Result<index::RemoveOutcome> remove(const shard::Hash& shard) = 0;
  // `name` is the uploaded file's name (?name=), possibly empty; it tells a
  // bundle (".caf") from a shard and names the source in logs and records.
  // A shard that fails validation is an error with the parser's rule and
  // offset; the daemon's own failures carry their "daemon."/"index." rule.
  [[nodiscard]] virtual UploadResult ingest(std::vector<std::uint8_t> bytes, std::string name) = 0;

  // ---- the fleet (daemon/fleet/): what a daemon without one answers ----------
  // Each waits at most the configured lookup bound, any thread.
  // For the queries of `raw` without a local location: the fleet's, in one round trip.
  virtual fleet_link::Reach fleet_misses(std::span<const shard::Hash> raw, const index::BatchResult& local,
                                         fleet_link::FleetMisses& out) {
    (void)raw, (void)local;
    out = {};
    return fleet_link::Reach::off;
  }
  // The same, unless every fleet connection is lent out while the link is
  // up: then nothing is asked and nullopt says so (the caller asks again
  // with fleet_misses once its own lookups in flight are done). For
  // lookups asked ahead, which must not turn a busy pool into an
  // "unavailable" answer.
  virtual std::optional<fleet_link::Reach> fleet_misses_if_idle(std::span<const shard::Hash> raw,
                                                                const index::BatchResult& local,
                                                                fleet_link::FleetMisses& out) {
    return fleet_misses(raw, local, out);
  }
  virtual fleet_link::Reach fleet_xorb(const shard::Hash&, std::optional<fleet::XorbAnswer>&) {
    return fleet_link::Reach::off;
  }
  // The fleet's source shard of a chunk, for a global-dedup reply
  // (fleet::Reader::shard_xorbs), within one bound.
  // `scope`: only a shard it admits (nullopt: any).
  virtual fleet_link::Reach fleet_source_shard(const shard::Hash&, const fleet::ShardXorbBounds&, std::uint64_t,
                                               const std::optional<shard::CasScope>& scope,
                                               std::optional<fleet::ShardXorbs>&) {
    (void)scope;
    return fleet_link::Reach::off;
  }
  virtual fleet_link::Reach fleet_file(const shard::Hash&, std::optional<fleet::FileAnswer>&) {
    return fleet_link::Reach::off;
  }
  virtual fleet_link::Reach fleet_sha256(const shard::Hash&, std::vector<shard::Hash>&) {
    return fleet_link::Reach::off;
  }
  // The next pass of the Xet cache steward as a dry run over the caches
  // under `root` (all when empty); nullopt while a pass is under way.
  virtual std::optional<std::vector<XetCachePlan>> xet_cache_plan(const std::string& root) {
    (void)root;
    return std::vector<XetCachePlan>{};
  }
  // The publisher's state; nullopt without a fleet.
  virtual std::optional<fleet_link::PublisherState> fleet_state() const { return std::nullopt; }
  // A fleet is configured: lookups may wait on its database.
  virtual bool fleet_configured() const { return false; }
  // The whole fleet as the database sees it (a longer bound: an operator
  // asks). "daemon.no_fleet" without a fleet; "fleet.*" when it is out of reach.
  [[nodiscard]] virtual shard::Result<fleet::Status> fleet_status() {
    return seam_error(kRuleNoFleet, "no fleet configured");
  }
  // Admin: drops every hold of a host that is gone for good. True when the
  // host was known; "fleet.*" when the primary cannot be reached.
  // Queues every parked outbox entry again; how many. "daemon.no_fleet"
  // without a fleet.
  [[nodiscard]] virtual shard::Result<std::uint64_t> fleet_retry() {
    return seam_error(kRuleNoFleet, "no fleet configured");
  }
  [[nodiscard]] virtual shard::Result<bool> fleet_forget_host(const std::string& name) {
    (void)name;
    return seam_error(kRuleNoFleet, "no fleet configured");
  }
};

}  // namespace dedupd::daemon
