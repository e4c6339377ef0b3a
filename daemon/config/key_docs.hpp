// The README's table of dedupd.yaml's keys (daemon/README.md, between its
// config-table marks), made from the key table: each key, its default as
// installed_defaults() has it, and its line of documentation; then the keys
// a reload cannot apply. `dedupd --config-table` prints it, and a unit test
// checks that the README holds exactly this.
#pragma once

#include <string>

namespace dedupd::daemon::config {

std::string config_table_markdown();

}  // namespace dedupd::daemon::config
