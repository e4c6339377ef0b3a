// POST /v1/admin/rescan, /v1/admin/reload, /v1/admin/purge[?dry_run=1], /v1/admin/ingest.
// These run on the admin thread with the caller already checked.
#include <fmt/format.h>

#include "daemon/api/render/failure.hpp"
#include "daemon/api/render/json_shapes.hpp"
#include "daemon/api/routes/route_util.hpp"
#include "daemon/api/routes/routes.hpp"

namespace dedupd::daemon::http {

namespace {

// "?dry_run", "?dry_run=1|true|yes" are true; "0|false|no" false.
std::optional<bool> flag(const Request& req, std::string_view name, Response* bad) {
  auto v = req.query_value(name);
  if (!v) return false;
  if (v->empty() || *v == "1" || *v == "true" || *v == "yes") return true;
  if (*v == "0" || *v == "false" || *v == "no") return false;
  *bad = error(kBadRequest, fmt::format("{} must be 1 or 0, not '{}'", name, *v));
  return std::nullopt;
}

}  // namespace

Response post_rescan(Context& ctx, Request& req) {
  auto result = ctx.service.rescan();
  if (!result) return failure(req, result.error());
  const RescanResult& r = *result;
  return json(dump(Json{{"scanned", r.scanned}, {"ingested", r.ingested}, {"rejected", r.rejected}}));
}

Response post_reload(Context& ctx, Request& req) {
  auto result = ctx.service.reload();
  if (!result) return failure(req, result.error());
  return json(dump(Json{{"config", result->config_file.empty() ? Json(nullptr) : Json(result->config_file)},
                        {"not_applied", result->not_applied}}));
}

// 202: the daemon answers, then starts again in its process and rebuilds;
// GET /v1/status ("index_health") follows it.
Response post_index_rebuild(Context& ctx, Request& req) {
  auto result = ctx.service.rebuild_index();
  if (!result) return failure(req, result.error());
  Response r = json(dump(Json{{"state", result->state}, {"moved_to", result->moved_to}, {"why", result->damage}}));
  r.status = 202;
  return r;
}

Response post_purge(Context& ctx, Request& req) {
  Response bad;
  auto dry_run = flag(req, "dry_run", &bad);
  if (!dry_run) return bad;
  const index::Index* idx = open_index(ctx);
  if (!idx) return not_ready();
  auto result = ctx.service.purge(*dry_run);
  if (!result) return failure(req, result.error());
  const PurgeResult& r = *result;
  Json expired = Json::array();
  for (const auto& h : r.expired) {
    auto info = idx->shard(h);
    if (!info) return index_failure(req, info.error());
    expired.push_back(info->has_value() ? shard_summary(**info) : Json{{"hash", h.to_string()}});
  }
  return json(dump(Json{{"dry_run", *dry_run}, {"expired", std::move(expired)}, {"deleted_files", r.deleted_files}}));
}

Response post_ingest(Context& ctx, Request& req) {
  if (req.body.empty()) return error(kBadRequest, "empty body: send the shard or .caf bytes");
  std::string name(req.query_value("name").value_or(""));
  if (name.find('/') != std::string::npos || name == "." || name == "..")
    return error(kBadRequest, "name must be a file name, not a path");
  if (!open_index(ctx)) return not_ready();

  UploadResult result = ctx.service.ingest(std::move(req.body), std::move(name));
  if (!result) {
    const shard::Error* e = &result.error();
    // The daemon's own failure (a full disk, a busy loop), not the upload's.
    if (failure_status(*e, {kUnprocessable, "invalid_shard"}).status != kUnprocessable) return failure(req, *e);
    Json doc = {{"error",
                 {{"code", error_code(kUnprocessable)},
                  {"message", e->to_string()},
                  {"rule", e->rule},
                  {"offset", e->offset}}}};
    return json(dump(doc), kUnprocessable);
  }
  Json shards = Json::array();
  for (const auto& s : *result)
    shards.push_back({{"hash", s.hash.to_string()},
                      {"added", s.added},
                      {"xorbs", s.xorbs},
                      {"chunks", s.chunks},
                      {"files", s.files}});
  return json(dump(Json{{"shards", std::move(shards)}}));
}

}  // namespace dedupd::daemon::http
