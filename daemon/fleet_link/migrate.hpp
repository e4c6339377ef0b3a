// dedupd --fleet-migrate --config FILE: creates or upgrades the fleet schema
// explicitly (for a role that may, when the daemons' roles may not), then
// exits. The url is never printed.
#pragma once

#include "daemon/config/config.hpp"

namespace dedupd::daemon::fleet_link {

// Prints what happened on stdout, a problem on stderr; returns the exit code
// (0 done, 1 failed, 2 no fleet configured).
// `final`: the migrations that older dedupd cannot use run too.
int run_fleet_migrate(const config::Config& config, bool final = false);

}  // namespace dedupd::daemon::fleet_link
