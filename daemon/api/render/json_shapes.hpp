// The JSON documents of docs/API.md ("Shapes used below" and each route),
// built from index values. Chunk locations go through JsonOut (hot path);
// the rest through nlohmann.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "daemon/api/render/json_out.hpp"
#include "index/types.hpp"

namespace dedupd::daemon::api::render {

using Json = nlohmann::json;

// Serialises untrusted text (paths, messages) without throwing on bad UTF-8.
std::string dump(const Json& doc);

// Location: {"xorb", "chunk_index", "byte_start", "byte_end",
// "unpacked_bytes", "flags", "shards": [{"shard", "expiry", "keyed"}...]}
// The fields a chunk location has wherever it came from, up to "shards":
// {"xorb",...,"flags","origin":"<origin>","shards": — the caller writes
// the shard list and the closing brace.
template <class Location>
void write_location_head(JsonOut& out, const Location& loc, std::string_view origin) {
  out.raw("{").key("xorb").hash(loc.xorb).raw(",").key("chunk_index").num(loc.chunk_index);
  out.raw(",").key("byte_start").num(loc.byte_start).raw(",").key("byte_end").num(loc.byte_end);
  out.raw(",").key("unpacked_bytes").num(loc.unpacked_bytes).raw(",").key("flags").num(loc.flags);
  out.raw(",").key("origin").ch('"').raw(origin).raw("\",").key("shards");
}

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

}  // namespace dedupd::daemon::api::render
