// POST /v1/admin/rescan, /v1/admin/reload, /v1/admin/purge[?dry_run=1], /v1/admin/ingest.
// These run on the admin thread with the caller already checked.
#include <fmt/format.h>

#include "daemon/api/render/failure.hpp"
#include "daemon/api/render/json_shapes.hpp"
#include "daemon/api/routes/route_util.hpp"
#include "daemon/api/routes/routes.hpp"

namespace dedupd::daemon::api::routes {

namespace {

// "?dry_run", "?dry_run=1|true|yes" are true; "0|false|no" false.
std::optional<bool> flag(const http::Request& req, std::string_view name, http::Response* bad) {
  auto v = req.query_value(name);
  if (!v) return false;
  if (v->empty() || *v == "1" || *v == "true" || *v == "yes") return true;
  if (*v == "0" || *v == "false" || *v == "no") return false;
  *bad = http::error(http::kBadRequest, fmt::format("{} must be 1 or 0, not '{}'", name, *v));
  return std::nullopt;
}

}  // namespace

http::Response post_rescan(http::Context& ctx, http::Request& req) {
  auto result = ctx.service.rescan();
  if (!result) return render::failure(req, result.error());
  const core::RescanResult& r = *result;
  return http::json(
      render::dump(render::Json{{"scanned", r.scanned}, {"ingested", r.ingested}, {"rejected", r.rejected}}));
}

http::Response post_reload(http::Context& ctx, http::Request& req) {
  auto result = ctx.service.reload();
  if (!result) return render::failure(req, result.error());
  return http::json(render::dump(
      render::Json{{"config", result->config_file.empty() ? render::Json(nullptr) : render::Json(result->config_file)},
                   {"not_applied", result->not_applied}}));
}

// 202: the daemon answers, then starts again in its process and rebuilds;
// GET /v1/status ("index_health") follows it.
http::Response post_index_rebuild(http::Context& ctx, http::Request& req) {
  auto result = ctx.service.rebuild_index();
  if (!result) return render::failure(req, result.error());
  http::Response r = http::json(
      render::dump(render::Json{{"state", result->state}, {"moved_to", result->moved_to}, {"why", result->damage}}));
  r.status = 202;
  return r;
}

http::Response post_purge(http::Context& ctx, http::Request& req) {
  http::Response bad;
  auto dry_run = flag(req, "dry_run", &bad);
  if (!dry_run) return bad;
  const index::Index* idx = open_index(ctx);
  if (!idx) return not_ready();
  auto result = ctx.service.purge(*dry_run);
  if (!result) return render::failure(req, result.error());
  const core::PurgeResult& r = *result;
  render::Json expired = render::Json::array();
  for (const auto& h : r.expired) {
    auto info = idx->shard(h);
    if (!info) return index_failure(req, info.error());
    expired.push_back(info->has_value() ? render::shard_summary(**info) : render::Json{{"hash", h.to_string()}});
  }
  return http::json(render::dump(
      render::Json{{"dry_run", *dry_run}, {"expired", std::move(expired)}, {"deleted_files", r.deleted_files}}));
}

http::Response post_ingest(http::Context& ctx, http::Request& req) {
  if (req.body.empty()) return http::error(http::kBadRequest, "empty body: send the shard or .caf bytes");
  std::string name(req.query_value("name").value_or(""));
  if (name.find('/') != std::string::npos || name == "." || name == "..")
    return http::error(http::kBadRequest, "name must be a file name, not a path");
  if (!open_index(ctx)) return not_ready();

  core::UploadResult result = ctx.service.ingest(std::move(req.body), std::move(name));
  if (!result) {
    const base::Error* e = &result.error();
    // The daemon's own failure (a full disk, a busy loop), not the upload's.
    if (render::failure_status(*e, {http::kUnprocessable, "invalid_shard"}).status != http::kUnprocessable)
      return render::failure(req, *e);
    render::Json doc = {{"error",
                         {{"code", http::error_code(http::kUnprocessable)},
                          {"message", e->to_string()},
                          {"rule", e->rule},
                          {"offset", e->offset}}}};
    return http::json(render::dump(doc), http::kUnprocessable);
  }
  render::Json shards = render::Json::array();
  for (const auto& s : *result)
    shards.push_back({{"hash", s.hash.to_string()},
                      {"added", s.added},
                      {"xorbs", s.xorbs},
                      {"chunks", s.chunks},
                      {"files", s.files}});
  return http::json(render::dump(render::Json{{"shards", std::move(shards)}}));
}

}  // namespace dedupd::daemon::api::routes
