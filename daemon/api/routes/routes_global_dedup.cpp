// GET /v1/chunks/default-merkledb/<hash> (and /v1/chunks/default/<hash>):
// the Xet global-dedup query, answered with a shard (global_dedup.hpp).
#include <ctime>

#include "api/routes.hpp"

#include "daemon/api/http/metrics.hpp"
#include "daemon/api/render/fleet_json.hpp"
#include "daemon/api/render/global_dedup.hpp"
#include "daemon/api/routes/route_util.hpp"
#include "daemon/api/routes/routes.hpp"
#include "xetcache/cas_url.hpp"

namespace dedupd::daemon::http {

namespace {

// A chunk this index lacks: the reply from the fleet shard it came from,
// within the fleet lookup bound. `reach` says how the fleet part went.
std::optional<std::vector<std::uint8_t>> fleet_reply(Context& ctx, const shard::Hash& chunk,
                                                     const ReplySettings& settings, fleet_link::Reach& reach) {
  std::optional<fleet::ShardXorbs> source;
  reach =
      ctx.service.fleet_source_shard(chunk, fleet_source_bounds(settings.bounds), settings.now, settings.scope, source);
  if (reach != fleet_link::Reach::answered || !source) return std::nullopt;
  return build_fleet_global_dedup_reply(*source, settings);
}

Response answer(Context& ctx, Request& req) {
  Response bad;
  auto chunk = hash_param(req.tail, "chunk", &bad);
  if (!chunk) return bad;
  const index::Index* idx = open_index(ctx);
  if (!idx) return not_ready();

  GlobalDedupKey key = ctx.service.global_dedup_key();
  // The endpoint's clients keep what they get until a process finds it
  // expired: theirs expires soon (xet_endpoint.reply_expiry), so an answer
  // the CAS has since refused is asked again, not reused.
  const bool endpoint = req.via == ::dedupd::api::kViaXetEndpoint;
  ReplySettings settings{key.key,
                         std::uint64_t(std::time(nullptr)),
                         endpoint ? key.endpoint_reply_lifetime_s : key.reply_lifetime_s,
                         {key.reply_max_xorbs, key.reply_max_bytes}};
  if (!req.cas.empty()) {
    // The endpoint names its CAS: a shard of another would have the client
    // skip xorbs its CAS lacks. A name that is no CAS URL answers nothing
    // (the endpoint then asks its upstream), never everything.
    auto cas = xetcache::normalize_cas_url(req.cas);
    if (!cas)
      return error(kBadRequest, std::string(::dedupd::api::kCasHeader) + ": \"" + req.cas.substr(0, 200) +
                                    "\" is not a CAS URL (http:// or https://, a host, no query)");
    settings.scope = shard::CasScope{*cas, key.unknown_cas_answers};
  }
  auto reply = build_global_dedup_reply(*idx, *chunk, settings);
  if (!reply) return index_failure(req, reply.error());
  fleet_link::Reach reach = fleet_link::Reach::off;
  if (!*reply && !local_only(req)) *reply = fleet_reply(ctx, *chunk, settings, reach);
  ctx.metrics.count_global_dedup(reply->has_value());

  Response r;
  if (*reply) {
    r.content_type = std::string(kOctets);
    r.body.assign(reinterpret_cast<const char*>((*reply)->data()), (*reply)->size());
  } else {
    r = error(kNotFound, "chunk not in the index");
  }
  // The body is a shard, not JSON: the fleet's part is said in a header.
  if (reach != fleet_link::Reach::off)
    r.headers.emplace_back("X-Dedupd-Fleet", reach == fleet_link::Reach::answered ? "ok" : "unavailable");
  return r;
}

}  // namespace

Response get_global_dedup(Context& ctx, Request& req) {
  Response r = answer(ctx, req);
  // Whatever is not a 200 (a miss, a bad hash, a daemon still starting)
  // makes the endpoint's nginx ask the upstream CAS.
  if (req.via == ::dedupd::api::kViaXetEndpoint) ctx.metrics.count_endpoint_query(r.status == kOk);
  return r;
}

}  // namespace dedupd::daemon::http
