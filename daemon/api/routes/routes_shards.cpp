// GET /v1/shards[?state=], GET /v1/shard/<hash>, DELETE /v1/shard/<hash>.
#include "daemon/api/render/failure.hpp"
#include "daemon/api/render/json_shapes.hpp"
#include "daemon/api/routes/route_util.hpp"
#include "daemon/api/routes/routes.hpp"

namespace dedupd::daemon::http {

namespace {

// Rejected files are not shards in the index (no identity, no entries);
// they are listed from the reject records under their content hash.
std::optional<Json> rejected_with_hash(const index::Index& idx, const shard::Hash& hash, const Request& req,
                                       Response* failure) {
  auto rejected = idx.rejected();
  if (!rejected) {
    *failure = index_failure(req, rejected.error());
    return std::nullopt;
  }
  for (const auto& r : *rejected)
    if (r.content_hash == hash) return rejected_summary(r);
  return std::nullopt;
}

}  // namespace

Response get_shards(Context& ctx, Request& req) {
  std::optional<index::ShardState> state;
  bool want_shards = true, want_rejected = true;
  if (auto s = req.query_value("state")) {
    if (*s == "live") state = index::ShardState::live;
    else if (*s == "expired") state = index::ShardState::expired;
    else if (*s == "removed") state = index::ShardState::removed;
    else if (*s != "rejected")
      return error(kBadRequest, "state must be live, expired, removed or rejected, not '" + std::string(*s) + "'");
    want_rejected = *s == "rejected";
    want_shards = !want_rejected;
  }
  const index::Index* idx = open_index(ctx);
  if (!idx) return not_ready();

  Json list = Json::array();
  if (want_shards) {
    auto shards = idx->shards(state);
    if (!shards) return index_failure(req, shards.error());
    for (const auto& s : *shards) list.push_back(shard_summary(s));
  }
  if (want_rejected) {
    auto rejected = idx->rejected();
    if (!rejected) return index_failure(req, rejected.error());
    for (const auto& r : *rejected) list.push_back(rejected_summary(r));
  }
  return json(dump(Json{{"shards", std::move(list)}}));
}

Response get_shard(Context& ctx, Request& req) {
  Response bad;
  auto hash = hash_param(req.tail, "shard", &bad);
  if (!hash) return bad;
  const index::Index* idx = open_index(ctx);
  if (!idx) return not_ready();
  auto info = idx->shard(*hash);
  if (!info) return index_failure(req, info.error());
  if (info->has_value()) return json(dump(shard_summary(**info)));
  Response failure;
  if (auto r = rejected_with_hash(*idx, *hash, req, &failure)) return json(dump(*r));
  if (failure.status != kOk) return failure;
  return error(kNotFound, "shard not known");
}

Response delete_shard(Context& ctx, Request& req) {
  Response bad;
  auto hash = hash_param(req.tail, "shard", &bad);
  if (!hash) return bad;
  const index::Index* idx = open_index(ctx);
  if (!idx) return not_ready();
  auto removed = ctx.service.remove(*hash);
  if (!removed) return failure(req, removed.error());
  switch (*removed) {
    case index::RemoveOutcome::not_found:
      return error(kNotFound, "shard not known");
    case index::RemoveOutcome::not_live:
      return error(kNotFound, "shard is not live (already removed or expired)");
    case index::RemoveOutcome::removed:
      break;
  }
  auto info = idx->shard(*hash);
  if (!info) return index_failure(req, info.error());
  Json summary = info->has_value() ? shard_summary(**info) : Json{{"hash", hash->to_string()}};
  return json(dump(Json{{"removed", std::move(summary)}}));
}

// A shard set aside after its CAS refused an upload that relied on it
// (docs/XET-ENDPOINT.md, "Learning") answers global-dedup queries again:
// the admin's word that the CAS holds its xorbs after all.
Response post_restore(Context& ctx, Request& req) {
  Response bad;
  auto hash = hash_param(req.tail, "shard", &bad);
  if (!hash) return bad;
  if (!open_index(ctx)) return not_ready();
  auto restored = ctx.service.restore(*hash);
  if (!restored) return failure(req, restored.error());
  if (!*restored) return error(kNotFound, "shard not known");
  return json(dump(Json{{"restored", shard_summary(**restored)}}));
}

}  // namespace dedupd::daemon::http
