#include "daemon/service_impl.hpp"

#include <memory>

#include "daemon/daemon.hpp"

namespace dedupd::daemon {

const index::Index* ServiceImpl::index() const { return daemon_.index(); }
StatusInfo ServiceImpl::status() const { return daemon_.status(); }
DaemonCounters ServiceImpl::counters() const { return daemon_.counters(); }
GlobalDedupKey ServiceImpl::global_dedup_key() const { return daemon_.global_dedup_key(); }

LearnHold ServiceImpl::learn_hold(const std::string& request_id, const std::string& cas,
                                  std::vector<std::uint8_t> bytes) {
  learn::Learner* l = daemon_.learner();
  return l ? l->hold(request_id, cas, std::move(bytes)) : LearnHold{};
}

shard::Result<std::optional<index::ShardInfo>> ServiceImpl::restore(const shard::Hash& shard) {
  Daemon& d = daemon_;
  return d.loop().call<std::optional<index::ShardInfo>>([&d, shard] { return d.restore(shard); }, d.admin_timeout());
}

LearnStats ServiceImpl::learn_stats() const {
  const learn::Learner* l = daemon_.learner();
  return l ? l->stats() : LearnStats{};
}

shard::Result<RescanResult> ServiceImpl::rescan() {
  Daemon& d = daemon_;
  return d.loop().call<RescanResult>([&d]() -> shard::Result<RescanResult> { return d.rescan(); }, d.admin_timeout());
}

// On this HTTP thread, not the work loop: the steward's dry run only reads
// the index, as its own worker does.
std::optional<std::vector<XetCachePlan>> ServiceImpl::xet_cache_plan(const std::string& root) {
  return daemon_.xet_cache_plan(root);
}

shard::Result<PurgeResult> ServiceImpl::purge(bool dry_run) {
  Daemon& d = daemon_;
  return d.loop().call<PurgeResult>([&d, dry_run] { return d.purge(dry_run); }, d.admin_timeout());
}

shard::Result<index::RemoveOutcome> ServiceImpl::remove(const shard::Hash& shard) {
  Daemon& d = daemon_;
  return d.loop().call<index::RemoveOutcome>([&d, shard] { return d.remove(shard); }, d.admin_timeout());
}

UploadResult ServiceImpl::ingest(std::vector<std::uint8_t> bytes, std::string name) {
  Daemon& d = daemon_;
  // Shared so a task that outlives a timed-out wait still owns its bytes.
  auto body = std::make_shared<std::vector<std::uint8_t>>(std::move(bytes));
  return d.loop().call<std::vector<IngestedShard>>(
      [&d, body, name = std::move(name)] { return d.ingest_upload(*body, name); }, d.admin_timeout());
}

}  // namespace dedupd::daemon
