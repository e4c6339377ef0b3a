// The fleet half of answers in JSON (docs/API.md, "Fleet"): fleet locations
// carry "origin": "fleet" and the hosts holding each fleet shard; an answer
// whose fleet part did not come within the bound says "fleet": "unavailable".
// Without a fleet nothing here is written and answers are as before.
#pragma once

#include "daemon/api/render/json_out.hpp"
#include "daemon/api/render/json_shapes.hpp"
#include "daemon/fleet_link/answers.hpp"
#include "daemon/fleet_link/state.hpp"
#include "fleet/fleet.hpp"

namespace dedupd::daemon::api::render {

// ,"fleet":"ok"|"unavailable" (nothing when off), to append inside an object.
void write_fleet_reach(JsonOut& out, fleet_link::Reach reach);
void mark_fleet(Json& doc, fleet_link::Reach reach);

// "shards":[...] of a fleet location: {"shard","keyed","holders":[...]} each.
void write_fleet_shard_refs(JsonOut& out, const fleet::ChunkLocation& loc,
                            const std::vector<fleet::FleetShardRef>& shards);
// A chunk location the fleet gave: the local location's fields, then
// "origin":"fleet" and "shards":[{"shard","keyed","holders":[...]}].
void write_fleet_location(JsonOut& out, const fleet::ChunkLocation& loc,
                          const std::vector<fleet::FleetShardRef>& shards);

Json fleet_shard_refs_json(const std::vector<fleet::FleetShardRef>& shards);
// One stored form of a xorb as the fleet keeps it, shaped as xorb_json.
Json fleet_xorb_json(const fleet::XorbAnswer& answer, const fleet::XorbForm& form);
Json fleet_file_json(const fleet::FileAnswer& file);

// The publisher's state for /v1/status and dedupctl status.
Json publisher_json(const fleet_link::PublisherState& s);

}  // namespace dedupd::daemon::api::render
