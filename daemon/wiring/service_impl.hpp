// The daemon's side of the API seam (daemon/api/service.hpp), made of the
// parts the core hands over (daemon/core/frontend.hpp), never of the Daemon
// itself: reads answer from any thread, admin actions run on the work loop
// while the calling HTTP thread waits, bounded by the request timeout.
// Lookups are answered by the answer layer from the same parts
// (answer_sources.hpp).
#pragma once

#include <memory>

#include "daemon/api/service.hpp"
#include "daemon/core/frontend.hpp"
#include "daemon/wiring/answer_sources.hpp"

namespace dedupd::daemon::wiring {

// The download cache's objects whose checks dedupd remembers (a few KB
// each: a 64 MiB xorb of 64 KiB chunks keeps 4 KB of chunk boundaries);
// past it the oldest check is forgotten and its object checked again.
inline constexpr std::size_t kCheckedDownloadObjects = 16384;
// Their digests kept in the state dir (a line of about 150 bytes each).
inline constexpr std::size_t kKeptDownloadDigests = 4 * kCheckedDownloadObjects;

class ServiceImpl final : public api::Service {
 public:
  // `objects`: the download cache's checked objects (none without grants).
  ServiceImpl(const core::ServiceParts& parts, std::unique_ptr<answers::DownloadGrants> grants,
              std::unique_ptr<answers::DownloadObjects> objects)
      : parts_(parts),
        answers_(parts.index, parts.ops, parts.fleet_lookup),
        grants_(std::move(grants)),
        objects_(grants_ ? std::move(objects) : nullptr) {}

  const index::Index* index() const override;
  core::StatusInfo status() const override;
  bool index_rebuilding() const override;
  core::DaemonCounters counters() const override;
  core::XetDownloadSettings xet_download_settings() const override { return parts_.ops.xet_download_settings(); }
  answers::Sources& answers() override { return answers_; }
  core::LearnHold learn_hold(const std::string& request_id, const std::string& cas,
                             std::vector<std::uint8_t> bytes) override;
  core::LearnStats learn_stats() const override;
  answers::DownloadGrants* download_grants() override { return grants_.get(); }
  answers::DownloadObjects* download_objects() override { return objects_.get(); }
  answers::DownloadFaults* download_faults() override { return &faults_; }
  base::Result<std::optional<index::ShardInfo>> restore(const shard::Hash& shard) override;

  base::Result<core::RescanResult> rescan() override;
  base::Result<core::ReloadResult> reload() override;
  base::Result<core::IndexHealth> rebuild_index() override;
  base::Result<core::PurgeResult> purge(bool dry_run) override;
  std::optional<std::vector<core::XetCachePlan>> xet_cache_plan(const std::string& root) override;
  base::Result<index::RemoveOutcome> remove(const shard::Hash& shard) override;
  core::UploadResult ingest(std::vector<std::uint8_t> bytes, std::string name) override;

  // The fleet's status and admin (service_fleet.cpp).
  std::optional<fleet_link::PublisherState> fleet_state() const override;
  base::Result<fleet::Status> fleet_status() override;
  base::Result<bool> fleet_forget_host(const std::string& name) override;
  base::Result<std::uint64_t> fleet_retry() override;

 private:
  core::ServiceParts parts_;
  AnswerSources answers_;
  std::unique_ptr<answers::DownloadGrants> grants_;
  std::unique_ptr<answers::DownloadObjects> objects_;
  answers::DownloadFaults faults_;
};

}  // namespace dedupd::daemon::wiring
