// ServiceImpl's fleet methods: the publisher's state, the whole fleet's
// status and the fleet's admin actions. Lookups ask the fleet through the
// answer layer (answer_sources.hpp), not here.
#include "daemon/wiring/service_impl.hpp"
#include "fleet/errors.hpp"

namespace dedupd::daemon::wiring {

using fleet_link::Reach;

std::optional<fleet_link::PublisherState> ServiceImpl::fleet_state() const { return parts_.ops.fleet_state(); }

base::Result<fleet::Status> ServiceImpl::fleet_status() {
  if (!parts_.ops.fleet_enabled()) return core::seam_error(core::kRuleNoFleet, "no fleet configured");
  fleet::Status out;
  std::string error;
  if (parts_.fleet_lookup.status(out, error) != Reach::answered)
    return fleet::make_error(fleet::kRuleUnavailable, error);
  return out;
}

base::Result<std::uint64_t> ServiceImpl::fleet_retry() { return parts_.ops.fleet_retry(); }

base::Result<bool> ServiceImpl::fleet_forget_host(const std::string& name) {
  if (!parts_.ops.fleet_enabled()) return core::seam_error(core::kRuleNoFleet, "no fleet configured");
  // Its own short-lived connection to the primary: an admin action, rare,
  // and it must not wait behind the publisher's backlog.
  auto w = fleet::Writer::connect(parts_.ops.fleet_options());
  if (!w) {
    base::Error e = w.error();
    e.message = "cannot reach the fleet primary: " + e.message;
    return e;
  }
  auto r = (*w)->forget_host(name);
  if (!r) {
    base::Error e = r.error();
    e.message = "forgetting host " + name + ": " + e.message;
    return e;
  }
  return *r;
}

}  // namespace dedupd::daemon::wiring
