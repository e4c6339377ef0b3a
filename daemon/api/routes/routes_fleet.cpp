// GET /v1/fleet/status, POST /v1/admin/fleet/forget-host/<name> and
// POST /v1/admin/fleet/retry.
#include <set>

#include "api/routes.hpp"
#include "daemon/api/render/failure.hpp"
#include "daemon/api/render/fleet_json.hpp"
#include "daemon/api/routes/route_util.hpp"
#include "daemon/api/routes/routes.hpp"
#include "fleet/host_name.hpp"

namespace dedupd::daemon::api::routes {

http::Response get_fleet_status(http::Context& ctx, http::Request&) {
  auto publisher = ctx.service.fleet_state();
  if (!publisher) return http::error(http::kNotFound, "no fleet configured (the fleet section of dedupd.yaml)");
  render::Json doc = {{"this_host", render::publisher_json(*publisher)}};
  auto status = ctx.service.fleet_status();
  // The fleet out of reach degrades the answer: this host's half still shows.
  render::mark_fleet(doc, status ? fleet_link::Reach::answered : fleet_link::Reach::unavailable);
  if (!status) {
    doc["error"] = status.error().message;
    return http::json(render::dump(doc));
  }
  const fleet::Status& s = *status;
  render::Json hosts = render::Json::array();
  std::set<std::string> versions;
  for (const auto& h : s.hosts) {
    hosts.push_back({{"name", h.name},
                     {"last_contact", h.last_contact ? render::Json(*h.last_contact) : render::Json(nullptr)},
                     {"shards", h.holds},
                     {"version", h.version.empty() ? render::Json(nullptr) : render::Json(h.version)}});
    versions.insert(h.version);
  }
  // Hosts on more than one release: a rolling upgrade (or rollback) is under
  // way. A host before 0.2.0 says no version (null).
  doc["mid_upgrade"] = versions.size() > 1;
  doc["set_aside_marks"] = s.set_aside;
  doc["schema_version"] = s.schema_version;
  doc["standby"] = s.standby;
  doc["hosts"] = std::move(hosts);
  doc["shards"] = s.shards;
  doc["xorbs"] = s.xorbs;
  doc["files"] = s.files;
  doc["entries"] = s.entries;
  doc["live_keys"] = s.live_keys;
  return http::json(render::dump(doc));
}

http::Response post_fleet_retry(http::Context& ctx, http::Request& req) {
  auto queued = ctx.service.fleet_retry();
  if (!queued) return render::failure(req, queued.error());
  return http::json(render::dump(render::Json{{"queued", *queued}}));
}

http::Response post_fleet_forget_host(http::Context& ctx, http::Request& req) {
  const std::string name = req.tail;
  if (!fleet::valid_host_name(name))
    return http::error(http::kBadRequest,
                       "\"" + name + "\" is not a host name (1-253 of letters, digits, '.', '_', '-')");
  if (!ctx.service.fleet_state())
    return http::error(http::kNotFound, "no fleet configured (the fleet section of dedupd.yaml)");
  auto forgotten = ctx.service.fleet_forget_host(name);
  if (!forgotten) return render::failure(req, forgotten.error());
  render::Json doc = {{"host", name}, {"forgotten", *forgotten}};
  if (!*forgotten) {
    doc["error"] = {{"code", http::error_code(http::kNotFound)}, {"message", "no such host in the fleet"}};
    return http::json(render::dump(doc), http::kNotFound);
  }
  return http::json(render::dump(doc));
}

}  // namespace dedupd::daemon::api::routes
