// The fleet from the client's side: `dedupctl fleet status`, `dedupctl fleet
// forget-host NAME` (admin), and what the lookup verbs share about answers
// that came (or could not come) from the fleet.
#pragma once

#include <cstdint>
#include <string>

#include "cli/client.hpp"
#include "cli/output.hpp"
#include "cli/verbs.hpp"

namespace dedupctl {

void add_fleet_verbs(CLI::App& app, Action& action);  // fleet status, fleet retry, fleet forget-host

// "?local_only=1" when asked to leave the fleet out, else "".
std::string local_only_query(bool local_only);
// A warning on stderr when the answer's fleet part did not come within the
// daemon's bound ("fleet": "unavailable"); the exit code stays the local one.
void warn_if_fleet_unavailable(Context& ctx, const json& doc);
// A shard reference from the fleet (it names holders, not an expiry).
bool is_fleet_ref(const json& ref);
// "fleet, held by a, b" for a fleet location's shard.
std::string fleet_ref_text(const json& ref);
// Adds the daemon's fleet link ("fleet" of /v1/status) to the status fields.
void add_fleet_status_fields(Fields& f, const json& fleet, std::uint64_t now);

}  // namespace dedupctl
