// GET /v1/chunk/<hash> and POST /v1/chunk: where chunks live. A batch is
// answered as a stream (chunk_answer.hpp), so its size is not bounded.
#include <fmt/format.h>

#include "api/routes.hpp"
#include "daemon/api/http/batch_request.hpp"
#include "daemon/api/http/hash_spool.hpp"
#include "daemon/api/http/metrics.hpp"
#include "daemon/api/render/chunk_answer.hpp"
#include "daemon/api/render/fleet_json.hpp"
#include "daemon/api/render/json_shapes.hpp"
#include "daemon/api/render/lookup_fields.hpp"
#include "daemon/api/routes/route_util.hpp"
#include "daemon/api/routes/routes.hpp"

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
  if (!found) {
    // Why it is not found, when the index can tell: every shard that held it
    // expired (kept a while after expiry). A hint only, so a failure to
    // read it leaves the plain answer.
    auto expired = idx->expired_holders(*hash);
    out.raw(",").key("expired_shards").ch('[');
    if (expired) {
      for (std::size_t i = 0; i < expired->size(); ++i) {
        const index::ShardInfo& s = (*expired)[i];
        if (i) out.ch(',');
        out.raw("{").key("shard").hash(s.hash).raw(",").key("keyed").boolean(s.keyed).raw(",").key("expiry");
        out.opt_num(s.expiry).raw(",").key("expired_at").num(s.ended_at).ch('}');
      }
    }
    out.ch(']');
    // A 404 still has the lookup's shape, plus the error every 4xx carries.
    out.raw(expired && !expired->empty()
                ? R"(,"error":{"code":"not_found","message":"every shard that held this chunk has expired"})"
                : R"(,"error":{"code":"not_found","message":"chunk not in the index"})");
  }
  out.ch('}');
  return json(std::move(body), found ? kOk : kNotFound);
}

Response post_chunk_batch(Context& ctx, Request& req) {
  LookupFields fields;
  if (auto list = req.query_value("fields")) {
    auto parsed = LookupFields::parse(*list);
    if (auto* message = std::get_if<std::string>(&parsed)) return error(kBadRequest, *message);
    fields = std::get<LookupFields>(parsed);
  }
  const bool lines = req.accept.find(kNdjson) != std::string::npos;

  std::shared_ptr<HashSpool> hashes = req.hashes;
  if (!hashes) {
    // A body handed over whole (tests, fuzzing): parsed the same way.
    hashes = std::make_shared<HashSpool>();
    HashStreamParser parser(HashStreamParser::form_of(req.content_type));
    std::string_view text(reinterpret_cast<const char*>(req.body.data()), req.body.size());
    if (!parser.feed(text, *hashes) || !parser.finish(*hashes)) {
      if (!hashes->error().empty()) return error(kNotReady, "busy", hashes->error());
      return error(kBadRequest, parser.error());
    }
  }

  const index::Index* idx = open_index(ctx);
  if (!idx) return not_ready();
  Response r;
  r.content_type = lines ? kNdjson : kJson;
  // The local misses of each block go to the fleet together, in one round trip.
  r.stream = std::make_shared<ChunkAnswer>(*idx, std::move(hashes), fields,
                                           lines ? ChunkAnswer::Shape::lines : ChunkAnswer::Shape::document,
                                           ctx.metrics, local_only(req) ? nullptr : &ctx.service);
  return r;
}

}  // namespace dedupd::daemon::http
