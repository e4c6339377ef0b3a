// ServiceImpl's fleet methods: the merge of local and fleet answers happens
// here, below the HTTP layer. A batch asks the fleet only for its local
// misses, all of them in one round trip; everything waits at most the
// configured bound (FleetLookup), and a fleet that is off costs nothing.
#include "daemon/wiring/service_impl.hpp"
#include "fleet/errors.hpp"

namespace dedupd::daemon {

using fleet_link::Reach;

fleet_link::Reach ServiceImpl::fleet_misses(std::span<const shard::Hash> raw, const index::BatchResult& local,
                                            fleet_link::FleetMisses& out) {
  return *ask_fleet(raw, local, out, false);
}

std::optional<fleet_link::Reach> ServiceImpl::fleet_misses_if_idle(std::span<const shard::Hash> raw,
                                                                   const index::BatchResult& local,
                                                                   fleet_link::FleetMisses& out) {
  return ask_fleet(raw, local, out, true);
}

std::optional<fleet_link::Reach> ServiceImpl::ask_fleet(std::span<const shard::Hash> raw,
                                                        const index::BatchResult& local, fleet_link::FleetMisses& out,
                                                        bool only_if_idle) {
  out.queries.clear();
  out.answers.clear();
  out.reach = Reach::off;
  if (!parts_.ops.fleet_enabled()) return Reach::off;
  std::vector<shard::Hash> misses;
  for (std::uint32_t i = 0; i < raw.size(); ++i)
    if (i >= local.size() || local.of(i).empty()) {
      out.queries.push_back(i);
      misses.push_back(raw[i]);
    }
  if (misses.empty()) return out.reach = Reach::answered;
  bool busy = false;
  out.reach = parts_.fleet_lookup.chunks(misses, out.answers, only_if_idle ? &busy : nullptr);
  if (busy) {
    out = {};
    return std::nullopt;
  }
  if (out.reach == Reach::answered && out.answers.size() != misses.size()) out.reach = Reach::unavailable;
  return out.reach;
}

fleet_link::Reach ServiceImpl::fleet_xorb(const shard::Hash& h, std::optional<fleet::XorbAnswer>& out) {
  if (!parts_.ops.fleet_enabled()) return Reach::off;
  return parts_.fleet_lookup.xorb(h, out);
}

fleet_link::Reach ServiceImpl::fleet_source_shard(const shard::Hash& raw_chunk, const fleet::ShardXorbBounds& bounds,
                                                  std::uint64_t now, const std::optional<shard::CasScope>& scope,
                                                  std::optional<fleet::ShardXorbs>& out) {
  if (!parts_.ops.fleet_enabled()) return Reach::off;
  // A shard this host set aside (its CAS refused an upload relying on it)
  // must not come back through the fleet's copy of it.
  // Nor one the fleet marks set aside for this CAS: another host's CAS
  // refused an upload relying on it.
  const index::Index* idx = parts_.index.load();
  std::optional<std::string> cas;
  if (scope) cas = scope->cas;
  auto set_aside_here = [this, idx, &cas](const shard::Hash& shard) {
    if (parts_.ops.fleet_set_aside(shard, cas)) return true;
    if (!idx) return false;
    auto info = idx->shard(shard);
    return info && *info && (*info)->set_aside;
  };
  return parts_.fleet_lookup.source_shard(raw_chunk, bounds, now, scope, set_aside_here, out);
}

fleet_link::Reach ServiceImpl::fleet_file(const shard::Hash& h, std::optional<fleet::FileAnswer>& out) {
  if (!parts_.ops.fleet_enabled()) return Reach::off;
  return parts_.fleet_lookup.file(h, out);
}

fleet_link::Reach ServiceImpl::fleet_sha256(const shard::Hash& h, std::vector<shard::Hash>& out) {
  if (!parts_.ops.fleet_enabled()) return Reach::off;
  return parts_.fleet_lookup.files_with_sha256(h, out);
}

std::optional<fleet_link::PublisherState> ServiceImpl::fleet_state() const { return parts_.ops.fleet_state(); }

bool ServiceImpl::fleet_configured() const { return parts_.ops.fleet_enabled(); }

shard::Result<fleet::Status> ServiceImpl::fleet_status() {
  if (!parts_.ops.fleet_enabled()) return seam_error(kRuleNoFleet, "no fleet configured");
  fleet::Status out;
  std::string error;
  if (parts_.fleet_lookup.status(out, error) != Reach::answered)
    return fleet::make_error(fleet::kRuleUnavailable, error);
  return out;
}

shard::Result<std::uint64_t> ServiceImpl::fleet_retry() { return parts_.ops.fleet_retry(); }

shard::Result<bool> ServiceImpl::fleet_forget_host(const std::string& name) {
  if (!parts_.ops.fleet_enabled()) return seam_error(kRuleNoFleet, "no fleet configured");
  // Its own short-lived connection to the primary: an admin action, rare,
  // and it must not wait behind the publisher's backlog.
  auto w = fleet::Writer::connect(parts_.ops.fleet_options());
  if (!w) {
    shard::Error e = w.error();
    e.message = "cannot reach the fleet primary: " + e.message;
    return e;
  }
  auto r = (*w)->forget_host(name);
  if (!r) {
    shard::Error e = r.error();
    e.message = "forgetting host " + name + ": " + e.message;
    return e;
  }
  return *r;
}

}  // namespace dedupd::daemon
