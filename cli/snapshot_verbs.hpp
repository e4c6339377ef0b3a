// Software Heritage read-shard snapshots of the index: `export` asks dedupd
// for one (admin route), `lookup-snapshot` answers from a file, no daemon.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "cli/verbs.hpp"
#include "swh/location.hpp"

namespace dedupctl {

void add_snapshot_verbs(CLI::App& app, Action& action);  // export, lookup-snapshot

// A snapshot location as JSON: query's Location shape without "flags" and
// "shards" (a snapshot records neither).
nlohmann::ordered_json snapshot_location_json(const dedupd::swh::Location& l);

}  // namespace dedupctl
