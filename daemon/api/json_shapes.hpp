// The JSON documents of docs/API.md ("Shapes used below" and each route),
// built from index values. Chunk locations go through JsonOut (hot path);
// the rest through nlohmann.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "daemon/api/json_out.hpp"
#include "index/types.hpp"

namespace dedupd::daemon::http {

using Json = nlohmann::json;

// Serialises untrusted text (paths, messages) without throwing on bad UTF-8.
std::string dump(const Json& doc);

// Location: {"xorb", "chunk_index", "byte_start", "byte_end",
// "unpacked_bytes", "flags", "shards": [{"shard", "expiry", "keyed"}...]}
void write_location(JsonOut& out, const index::Location& loc);
void write_location(JsonOut& out, const index::BatchLocation& loc, const std::vector<index::ShardRef>& shards);
void write_shard_refs(JsonOut& out, const std::vector<index::ShardRef>& shards);

Json shard_ref_json(const index::ShardRef& ref);
// Shard summary; "reason" only for rejected entries.
Json shard_summary(const index::ShardInfo& info);
Json rejected_summary(const index::RejectInfo& reject);
// The body of GET /v1/stats (also "stats" in /v1/status).
Json stats_json(const index::Stats& stats);
// One stored form of a xorb: {"xorb", "num_chunks", ...}.
Json xorb_json(const index::XorbInfo& form);
Json file_json(const index::FileInfo& file);

}  // namespace dedupd::daemon::http
