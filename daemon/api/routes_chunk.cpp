// GET /v1/chunk/<hash> and POST /v1/chunk: where chunks live.
#include <fmt/format.h>

#include "api/routes.hpp"
#include "daemon/api/batch_request.hpp"
#include "daemon/api/fleet_json.hpp"
#include "daemon/api/json_shapes.hpp"
#include "daemon/api/metrics.hpp"
#include "daemon/api/route_util.hpp"
#include "daemon/api/routes.hpp"

namespace dedupd::daemon::http {

Response get_chunk(Context& ctx, Request& req) {
  Response bad;
  auto hash = hash_param(req.tail, "chunk", &bad);
  if (!hash) return bad;
  const index::Index* idx = open_index(ctx);
  if (!idx) return not_ready();
  auto locations = idx->lookup(*hash);
  if (!locations) return index_failure(req, locations.error());
  // Not here: the fleet's locations, within the lookup bound (fleet_json.hpp).
  fleet_link::FleetMisses remote;
  if (locations->empty() && !local_only(req)) ctx.service.fleet_misses(std::span(&*hash, 1), {}, remote);
  bool found = !locations->empty() || !remote.of(0).empty();
  ctx.metrics.count_lookups(1, found ? 1 : 0);

  std::string body;
  body.reserve(128 + 320 * locations->size());
  JsonOut out(body);
  out.raw("{").key("hash").hash(*hash).raw(",").key("found").boolean(found).raw(",").key("locations").ch('[');
  for (std::size_t i = 0; i < locations->size(); ++i) {
    if (i) out.ch(',');
    write_location(out, (*locations)[i]);
  }
  for (std::size_t i = 0; i < remote.of(0).size(); ++i) {
    if (i) out.ch(',');
    write_fleet_location(out, remote.of(0)[i], remote.answers.shards(remote.of(0)[i]));
  }
  out.ch(']');
  write_fleet_reach(out, remote.reach);
  // A 404 still has the lookup's shape, plus the error every 4xx carries.
  if (!found) out.raw(R"(,"error":{"code":"not_found","message":"chunk not in the index"})");
  out.ch('}');
  return json(std::move(body), found ? kOk : kNotFound);
}

Response post_chunk_batch(Context& ctx, Request& req) {
  std::string_view text(reinterpret_cast<const char*>(req.body.data()), req.body.size());
  HashBatch parsed = parse_hash_batch(text, ::dedupd::api::kMaxBatchHashes);
  if (auto* message = std::get_if<std::string>(&parsed)) return error(kBadRequest, *message);
  const auto& hashes = std::get<std::vector<shard::Hash>>(parsed);

  const index::Index* idx = open_index(ctx);
  if (!idx) return not_ready();
  // One read transaction for the whole batch: a consistent snapshot, and
  // no per-hash transaction cost.
  index::BatchResult result;
  if (auto st = idx->lookup_batch(hashes, result); !st) return index_failure(req, st.error());
  // The local misses go to the fleet together, in one round trip.
  fleet_link::FleetMisses remote;
  if (!local_only(req)) ctx.service.fleet_misses(hashes, result, remote);

  std::string body;
  body.reserve(64 + 110 * hashes.size() + 320 * result.locations.size());
  JsonOut out(body);
  std::uint64_t found = 0;
  out.raw("{").key("results").ch('[');
  for (std::size_t i = 0; i < hashes.size(); ++i) {
    auto locations = result.of(i);
    auto remote_locations = remote.of(std::uint32_t(i));
    bool hit = !locations.empty() || !remote_locations.empty();
    found += hit;
    if (i) out.ch(',');
    out.raw("{").key("hash").hash(hashes[i]).raw(",").key("found").boolean(hit).raw(",").key("locations").ch('[');
    for (std::size_t j = 0; j < locations.size(); ++j) {
      if (j) out.ch(',');
      write_location(out, locations[j], result.shards(locations[j]));
    }
    for (std::size_t j = 0; j < remote_locations.size(); ++j) {
      if (j) out.ch(',');
      write_fleet_location(out, remote_locations[j], remote.answers.shards(remote_locations[j]));
    }
    out.raw("]}");
  }
  out.raw("],").key("found").num(found).raw(",").key("missing").num(hashes.size() - found);
  write_fleet_reach(out, remote.reach);
  out.ch('}');
  ctx.metrics.count_lookups(hashes.size(), found);
  return json(std::move(body));
}

}  // namespace dedupd::daemon::http
