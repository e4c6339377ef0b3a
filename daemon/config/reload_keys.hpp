// What a reload does with each key, read from the key table's reload flag:
// a key marked restart keeps its running value, and a change to it is said
// (POST /v1/admin/reload's not_applied, `dedupctl reload`, SIGHUP's log).
#pragma once

#include <string>
#include <vector>

#include "daemon/config/config.hpp"

namespace dedupd::daemon::config {

// The restart keys `next` changes, each as "key (stays VALUE)", VALUE the
// running one, in the table's order.
std::vector<std::string> changes_waiting_for_restart(const Config& running, const Config& next);

// `next` with every restart key as `running` has it: what a reload applies.
Config as_reload_applies(const Config& running, Config next);

}  // namespace dedupd::daemon::config
