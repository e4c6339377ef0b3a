// The daemon's side of the API seam (daemon/api/service.hpp), made of the
// parts the core hands over (daemon/core/frontend.hpp), never of the Daemon
// itself: reads answer from any thread, admin actions run on the work loop
// while the calling HTTP thread waits, bounded by the request timeout.
#pragma once

#include "daemon/api/service.hpp"
#include "daemon/core/frontend.hpp"
#include "daemon/fleet/lookup.hpp"
#include "daemon/learn/learner.hpp"
#include "daemon/loop/event_loop.hpp"

namespace dedupd::daemon {

class ServiceImpl final : public Service {
 public:
  explicit ServiceImpl(const ServiceParts& parts) : parts_(parts) {}

  const index::Index* index() const override;
  StatusInfo status() const override;
  bool index_rebuilding() const override;
  DaemonCounters counters() const override;
  GlobalDedupKey global_dedup_key() const override;
  LearnHold learn_hold(const std::string& request_id, const std::string& cas, std::vector<std::uint8_t> bytes) override;
  LearnStats learn_stats() const override;
  shard::Result<std::optional<index::ShardInfo>> restore(const shard::Hash& shard) override;

  shard::Result<RescanResult> rescan() override;
  shard::Result<ReloadResult> reload() override;
  shard::Result<IndexHealth> rebuild_index() override;
  shard::Result<PurgeResult> purge(bool dry_run) override;
  std::optional<std::vector<XetCachePlan>> xet_cache_plan(const std::string& root) override;
  shard::Result<index::RemoveOutcome> remove(const shard::Hash& shard) override;
  UploadResult ingest(std::vector<std::uint8_t> bytes, std::string name) override;

  // The fleet half of answers (service_fleet.cpp).
  fleet_link::Reach fleet_misses(std::span<const shard::Hash> raw, const index::BatchResult& local,
                                 fleet_link::FleetMisses& out) override;
  std::optional<fleet_link::Reach> fleet_misses_if_idle(std::span<const shard::Hash> raw,
                                                        const index::BatchResult& local,
                                                        fleet_link::FleetMisses& out) override;
  fleet_link::Reach fleet_xorb(const shard::Hash& h, std::optional<fleet::XorbAnswer>& out) override;
  fleet_link::Reach fleet_source_shard(const shard::Hash& raw_chunk, const fleet::ShardXorbBounds& bounds,
                                       std::uint64_t now, const std::optional<shard::CasScope>& scope,
                                       std::optional<fleet::ShardXorbs>& out) override;
  fleet_link::Reach fleet_file(const shard::Hash& h, std::optional<fleet::FileAnswer>& out) override;
  fleet_link::Reach fleet_sha256(const shard::Hash& h, std::vector<shard::Hash>& out) override;
  std::optional<fleet_link::PublisherState> fleet_state() const override;
  bool fleet_configured() const override;
  shard::Result<fleet::Status> fleet_status() override;
  shard::Result<bool> fleet_forget_host(const std::string& name) override;
  shard::Result<std::uint64_t> fleet_retry() override;

 private:
  // fleet_misses, or with only_if_idle nullopt when every fleet connection
  // is lent out (service_fleet.cpp).
  std::optional<fleet_link::Reach> ask_fleet(std::span<const shard::Hash> raw, const index::BatchResult& local,
                                             fleet_link::FleetMisses& out, bool only_if_idle);

  ServiceParts parts_;
};

}  // namespace dedupd::daemon
