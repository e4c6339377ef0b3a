// GET /v1/chunks/default-merkledb/<hash> (and /v1/chunks/default/<hash>):
// the Xet global-dedup query, answered with a shard (global_dedup.hpp).
#include <ctime>
#include <set>

#include "daemon/api/fleet_json.hpp"
#include "daemon/api/global_dedup.hpp"
#include "daemon/api/metrics.hpp"
#include "daemon/api/route_util.hpp"
#include "daemon/api/routes.hpp"

namespace dedupd::daemon::http {

namespace {

// A chunk this index lacks: the reply from the fleet's xorbs of it, each
// fleet call within the lookup bound. `reach` says how the fleet part went.
std::optional<std::vector<std::uint8_t>> fleet_reply(Context& ctx, const shard::Hash& chunk,
                                                     const ReplySettings& settings, fleet_link::Reach& reach) {
  fleet_link::FleetMisses remote;
  reach = ctx.service.fleet_misses(std::span(&chunk, 1), {}, remote);
  std::vector<fleet::XorbAnswer> xorbs;
  std::set<shard::Hash> asked;
  for (const fleet::ChunkLocation& loc : remote.of(0)) {
    if (loc.keyed || !asked.insert(loc.xorb).second) continue;  // keyed forms are not served
    std::optional<fleet::XorbAnswer> answer;
    reach = ctx.service.fleet_xorb(loc.xorb, answer);
    if (reach != fleet_link::Reach::answered) break;  // no second wait on a fleet that failed one
    if (answer) xorbs.push_back(std::move(*answer));
  }
  return build_fleet_global_dedup_reply(xorbs, settings);
}

}  // namespace

Response get_global_dedup(Context& ctx, Request& req) {
  Response bad;
  auto chunk = hash_param(req.tail, "chunk", &bad);
  if (!chunk) return bad;
  const index::Index* idx = open_index(ctx);
  if (!idx) return not_ready();

  GlobalDedupKey key = ctx.service.global_dedup_key();
  ReplySettings settings{
      key.key, std::uint64_t(std::time(nullptr)), key.reply_lifetime_s, {key.reply_max_xorbs, key.reply_max_bytes}};
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

}  // namespace dedupd::daemon::http
