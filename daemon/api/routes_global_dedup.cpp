// GET /v1/chunks/default-merkledb/<hash> (and /v1/chunks/default/<hash>):
// the Xet global-dedup query, answered with a shard (global_dedup.hpp).
#include <ctime>

#include "daemon/api/global_dedup.hpp"
#include "daemon/api/metrics.hpp"
#include "daemon/api/route_util.hpp"
#include "daemon/api/routes.hpp"

namespace dedupd::daemon::http {

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
  ctx.metrics.count_global_dedup(reply->has_value());
  if (!*reply) return error(kNotFound, "chunk not in the index");

  Response r;
  r.content_type = std::string(kOctets);
  r.body.assign(reinterpret_cast<const char*>((*reply)->data()), (*reply)->size());
  return r;
}

}  // namespace dedupd::daemon::http
