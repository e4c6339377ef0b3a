// The documents of the single lookups (docs/API.md): GET /v1/chunk/<hash>,
// /v1/xorb/<hash>, /v1/file/<hash> and /v1/sha256/<hex>, each from its
// typed answer (daemon/answers/). Local and fleet answers share their shapes;
// a fleet part says how it went ("fleet": "ok" | "unavailable").
#pragma once

#include <string>
#include <string_view>

#include "daemon/answers/chunk.hpp"
#include "daemon/answers/file.hpp"
#include "daemon/answers/sha256.hpp"
#include "daemon/answers/xorb.hpp"
#include "daemon/api/render/json_shapes.hpp"

namespace dedupd::daemon::api::render {

// {"hash","found","locations":[...]}, and when not found the expired shards
// that held it and the error a 404 carries.
std::string chunk_json(const shard::Hash& hash, const answers::ChunkAnswer& answer);

// A found xorb: its primary form, the others in "other_forms".
Json xorb_answer_json(const answers::XorbAnswer& answer);
// A found file, local or the fleet's.
Json file_answer_json(const answers::FileAnswer& answer);
// {"sha256","files"}; the error a 404 carries when there are none.
Json sha256_answer_json(const shard::Hash& sha256, const answers::Sha256Answer& answer);

// A 404 body that says whether the fleet was asked and could not answer.
Json not_found_json(answers::Reach reach, std::string_view message);

}  // namespace dedupd::daemon::api::render
