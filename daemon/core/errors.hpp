// The errors the daemon's side of the API seam (daemon/api/service.hpp)
// returns besides the index's ("index.*") and the fleet's ("fleet.*"). The
// HTTP layer answers each rule with its own status (daemon/api/render/failure.cpp),
// so a rule here is part of the API: add one, map it there.
#pragma once

#include <string>

#include "base/result.hpp"

namespace dedupd::daemon::core {

// The work loop did not finish an admin action within the admin timeout: it
// is queued and still runs, so repeating it is the caller's decision.
inline constexpr const char* kRuleBusy = "daemon.busy";
// A fleet action on a daemon without a fleet section in its config.
inline constexpr const char* kRuleNoFleet = "daemon.no_fleet";
// A reload found the configuration file wrong (or unreadable): nothing of it
// applied, the running configuration stays; the message lists each error.
inline constexpr const char* kRuleBadConfig = "daemon.bad_config";
// An admin action threw on the work loop (out of memory, a bug): logged, 500.
inline constexpr const char* kRuleInternal = "daemon.internal";

inline base::Error seam_error(const char* rule, std::string message) {
  return base::Error{rule, 0, std::move(message), /*has_offset=*/false};
}

}  // namespace dedupd::daemon::core
