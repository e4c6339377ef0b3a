#include "daemon/wiring/service_impl.hpp"

#include <memory>

#include "daemon/learn/learner.hpp"
#include "daemon/loop/event_loop.hpp"

namespace dedupd::daemon::wiring {

const index::Index* ServiceImpl::index() const { return parts_.index.load(); }
core::StatusInfo ServiceImpl::status() const {
  core::StatusInfo s = parts_.ops.status();
  // The core counts what nginx reports; the grant and fill answers, this
  // side of the seam, count why they refused or failed.
  if (s.xet_downloads) s.xet_downloads->faults = faults_.snapshot();
  return s;
}
bool ServiceImpl::index_rebuilding() const { return parts_.ops.index_rebuilding(); }
core::DaemonCounters ServiceImpl::counters() const { return parts_.counters.snapshot(); }

core::LearnHold ServiceImpl::learn_hold(const std::string& request_id, const std::string& cas,
                                        std::vector<std::uint8_t> bytes) {
  return parts_.learner.hold(request_id, cas, std::move(bytes));
}

base::Result<std::optional<index::ShardInfo>> ServiceImpl::restore(const shard::Hash& shard) {
  core::Operations& ops = parts_.ops;
  return parts_.loop.call<std::optional<index::ShardInfo>>([&ops, shard] { return ops.restore(shard); },
                                                           ops.admin_timeout());
}

core::LearnStats ServiceImpl::learn_stats() const { return parts_.learner.stats(); }

base::Result<core::RescanResult> ServiceImpl::rescan() {
  core::Operations& ops = parts_.ops;
  return parts_.loop.call<core::RescanResult>([&ops]() -> base::Result<core::RescanResult> { return ops.rescan(); },
                                              ops.admin_timeout());
}

base::Result<core::ReloadResult> ServiceImpl::reload() {
  core::Operations& ops = parts_.ops;
  return parts_.loop.call<core::ReloadResult>([&ops] { return ops.reload_config(); }, ops.admin_timeout());
}

base::Result<core::IndexHealth> ServiceImpl::rebuild_index() {
  core::Operations& ops = parts_.ops;
  return parts_.loop.call<core::IndexHealth>([&ops] { return ops.rebuild_index(); }, ops.admin_timeout());
}

// On this HTTP thread, not the work loop: the steward's dry run only reads
// the index, as its own worker does.
std::optional<std::vector<core::XetCachePlan>> ServiceImpl::xet_cache_plan(const std::string& root) {
  return parts_.ops.xet_cache_plan(root);
}

base::Result<core::PurgeResult> ServiceImpl::purge(bool dry_run) {
  core::Operations& ops = parts_.ops;
  return parts_.loop.call<core::PurgeResult>([&ops, dry_run] { return ops.purge(dry_run); }, ops.admin_timeout());
}

base::Result<index::RemoveOutcome> ServiceImpl::remove(const shard::Hash& shard) {
  core::Operations& ops = parts_.ops;
  return parts_.loop.call<index::RemoveOutcome>([&ops, shard] { return ops.remove(shard); }, ops.admin_timeout());
}

core::UploadResult ServiceImpl::ingest(std::vector<std::uint8_t> bytes, std::string name) {
  core::Operations& ops = parts_.ops;
  // Shared so a task that outlives a timed-out wait still owns its bytes.
  auto body = std::make_shared<std::vector<std::uint8_t>>(std::move(bytes));
  return parts_.loop.call<std::vector<core::IngestedShard>>(
      [&ops, body, name = std::move(name)] { return ops.ingest_upload(*body, name); }, ops.admin_timeout());
}

}  // namespace dedupd::daemon::wiring
