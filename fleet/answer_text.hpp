// The two text forms a lookup answer carries (built by fleet/sql.hpp and the
// lookup statement): a location's fleet shards with their holders,
// "hex=hostA,hostB hex2=hostC" (shard hashes in byte-order hex), and the
// live key list, "hex,hex". A shard whose CAS set is known (schema 4) has
// it after its holders, as the hex of the set: "hex=hostA;68747470...".
// Malformed text is fleet.protocol, never a crash.
#pragma once

#include <string_view>
#include <vector>

#include "fleet/fleet.hpp"

namespace dedupd::fleet {

Result<std::vector<FleetShardRef>> parse_shard_list(std::string_view text);
Result<std::vector<Key>> parse_key_list(std::string_view text);

}  // namespace dedupd::fleet
