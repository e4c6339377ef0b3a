// GET /v1/shards[?state=], GET /v1/shard/<hash>, DELETE /v1/shard/<hash>.
#include "daemon/api/render/failure.hpp"
#include "daemon/api/render/json_shapes.hpp"
#include "daemon/api/routes/route_util.hpp"
#include "daemon/api/routes/routes.hpp"

namespace dedupd::daemon::api::routes {

namespace {

// Rejected files are not shards in the index (no identity, no entries);
// they are listed from the reject records under their content hash.
std::optional<render::Json> rejected_with_hash(const index::Index& idx, const shard::Hash& hash,
                                               const http::Request& req, http::Response* failure) {
  auto rejected = idx.rejected();
  if (!rejected) {
    *failure = index_failure(req, rejected.error());
    return std::nullopt;
  }
  for (const auto& r : *rejected)
    if (r.content_hash == hash) return render::rejected_summary(r);
  return std::nullopt;
}

}  // namespace

http::Response get_shards(http::Context& ctx, http::Request& req) {
  std::optional<index::ShardState> state;
  bool want_shards = true, want_rejected = true;
  if (auto s = req.query_value("state")) {
    if (*s == "live") state = index::ShardState::live;
    else if (*s == "expired") state = index::ShardState::expired;
    else if (*s == "removed") state = index::ShardState::removed;
    else if (*s != "rejected")
      return http::error(http::kBadRequest,
                         "state must be live, expired, removed or rejected, not '" + std::string(*s) + "'");
    want_rejected = *s == "rejected";
    want_shards = !want_rejected;
  }
  const index::Index* idx = open_index(ctx);
  if (!idx) return not_ready();

  render::Json list = render::Json::array();
  if (want_shards) {
    auto shards = idx->shards(state);
    if (!shards) return index_failure(req, shards.error());
    for (const auto& s : *shards) list.push_back(render::shard_summary(s));
  }
  if (want_rejected) {
    auto rejected = idx->rejected();
    if (!rejected) return index_failure(req, rejected.error());
    for (const auto& r : *rejected) list.push_back(render::rejected_summary(r));
  }
  return http::json(render::dump(render::Json{{"shards", std::move(list)}}));
}

http::Response get_shard(http::Context& ctx, http::Request& req) {
  http::Response bad;
  auto hash = hash_param(req.tail, "shard", &bad);
  if (!hash) return bad;
  const index::Index* idx = open_index(ctx);
  if (!idx) return not_ready();
  auto info = idx->shard(*hash);
  if (!info) return index_failure(req, info.error());
  if (info->has_value()) return http::json(render::dump(render::shard_summary(**info)));
  http::Response failure;
  if (auto r = rejected_with_hash(*idx, *hash, req, &failure)) return http::json(render::dump(*r));
  if (failure.status != http::kOk) return failure;
  return http::error(http::kNotFound, "shard not known");
}

http::Response delete_shard(http::Context& ctx, http::Request& req) {
  http::Response bad;
  auto hash = hash_param(req.tail, "shard", &bad);
  if (!hash) return bad;
  const index::Index* idx = open_index(ctx);
  if (!idx) return not_ready();
  auto removed = ctx.service.remove(*hash);
  if (!removed) return render::failure(req, removed.error());
  switch (*removed) {
    case index::RemoveOutcome::not_found:
      return http::error(http::kNotFound, "shard not known");
    case index::RemoveOutcome::not_live:
      return http::error(http::kNotFound, "shard is not live (already removed or expired)");
    case index::RemoveOutcome::removed:
      break;
  }
  auto info = idx->shard(*hash);
  if (!info) return index_failure(req, info.error());
  render::Json summary = info->has_value() ? render::shard_summary(**info) : render::Json{{"hash", hash->to_string()}};
  return http::json(render::dump(render::Json{{"removed", std::move(summary)}}));
}

// A shard set aside after its CAS refused an upload that relied on it
// (docs/XET-ENDPOINT.md, "Learning") answers global-dedup queries again:
// the admin's word that the CAS holds its xorbs after all.
http::Response post_restore(http::Context& ctx, http::Request& req) {
  http::Response bad;
  auto hash = hash_param(req.tail, "shard", &bad);
  if (!hash) return bad;
  if (!open_index(ctx)) return not_ready();
  auto restored = ctx.service.restore(*hash);
  if (!restored) return render::failure(req, restored.error());
  if (!*restored) return http::error(http::kNotFound, "shard not known");
  return http::json(render::dump(render::Json{{"restored", render::shard_summary(**restored)}}));
}

}  // namespace dedupd::daemon::api::routes
