// GET /v1/xorb/<hash>, /v1/file/<hash>, /v1/sha256/<hex>.
#include <algorithm>

#include "daemon/api/render/fleet_json.hpp"
#include "daemon/api/render/json_shapes.hpp"
#include "daemon/api/routes/route_util.hpp"
#include "daemon/api/routes/routes.hpp"

namespace dedupd::daemon::http {

namespace {

// A 404 that says whether the fleet was asked and could not answer.
Response not_found(fleet_link::Reach reach, std::string_view message) {
  Json doc = {{"error", {{"code", error_code(kNotFound)}, {"message", message}}}};
  mark_fleet(doc, reach);
  return json(dump(doc), kNotFound);
}

// A xorb this index lacks: the fleet's forms of it, raw first.
Response fleet_xorb(Context& ctx, Request& req, const shard::Hash& hash) {
  std::optional<fleet::XorbAnswer> remote;
  fleet_link::Reach reach = local_only(req) ? fleet_link::Reach::off : ctx.service.fleet_xorb(hash, remote);
  if (!remote || remote->forms.empty()) return not_found(reach, "xorb not in the index");
  auto primary = std::find_if(remote->forms.begin(), remote->forms.end(), [](const auto& f) { return !f.keyed; });
  if (primary == remote->forms.end()) primary = remote->forms.begin();
  Json doc = fleet_xorb_json(*remote, *primary);
  if (remote->forms.size() > 1) {
    Json others = Json::array();
    for (auto it = remote->forms.begin(); it != remote->forms.end(); ++it)
      if (it != primary) others.push_back(fleet_xorb_json(*remote, *it));
    doc["other_forms"] = std::move(others);
  }
  mark_fleet(doc, reach);
  return json(dump(doc));
}

}  // namespace

Response get_xorb(Context& ctx, Request& req) {
  Response bad;
  auto hash = hash_param(req.tail, "xorb", &bad);
  if (!hash) return bad;
  const index::Index* idx = open_index(ctx);
  if (!idx) return not_ready();
  auto forms = idx->xorb(*hash);
  if (!forms) return index_failure(req, forms.error());
  if (forms->empty()) return fleet_xorb(ctx, req, *hash);

  // The same xorb can be stored raw and keyed (different chunk hashes). The
  // document describes one form, raw when there is one (its hashes are the
  // ones users can look up); the others follow in "other_forms".
  auto primary = std::find_if(forms->begin(), forms->end(), [](const auto& f) { return !f.keyed; });
  if (primary == forms->end()) primary = forms->begin();
  Json doc = xorb_json(*primary);
  if (forms->size() > 1) {
    Json others = Json::array();
    for (auto it = forms->begin(); it != forms->end(); ++it)
      if (it != primary) others.push_back(xorb_json(*it));
    doc["other_forms"] = std::move(others);
  }
  return json(dump(doc));
}

Response get_file(Context& ctx, Request& req) {
  Response bad;
  auto hash = hash_param(req.tail, "file", &bad);
  if (!hash) return bad;
  const index::Index* idx = open_index(ctx);
  if (!idx) return not_ready();
  auto file = idx->file(*hash);
  if (!file) return index_failure(req, file.error());
  if (!file->has_value()) {
    // Not here: the fleet may know it (within the lookup bound).
    std::optional<fleet::FileAnswer> remote;
    fleet_link::Reach reach = local_only(req) ? fleet_link::Reach::off : ctx.service.fleet_file(*hash, remote);
    if (remote) {
      Json doc = fleet_file_json(*remote);
      mark_fleet(doc, reach);
      return json(dump(doc));
    }
    return not_found(reach, "file not in the index");
  }
  return json(dump(file_json(**file)));
}

Response get_sha256(Context& ctx, Request& req) {
  // The index stores the digest the way the shard does, whose Xet string
  // form is the ordinary hex (FORMAT-NOTES), so the Xet parser applies.
  auto digest = shard::Hash::parse(req.tail);
  if (!digest) return error(kBadRequest, "malformed sha256: " + digest.error().message);
  const index::Index* idx = open_index(ctx);
  if (!idx) return not_ready();
  auto files = idx->files_with_sha256(*digest);
  if (!files) return index_failure(req, files.error());
  Json doc = {{"sha256", digest->to_string()}, {"files", Json::array()}};
  for (const auto& f : *files) doc["files"].push_back(f.to_string());
  if (files->empty() && !local_only(req)) {
    std::vector<shard::Hash> remote;
    fleet_link::Reach reach = ctx.service.fleet_sha256(*digest, remote);
    mark_fleet(doc, reach);
    for (const auto& f : remote) doc["files"].push_back(f.to_string());
    if (!remote.empty()) doc["origin"] = "fleet";
    *files = std::move(remote);
  }
  if (files->empty()) {
    doc["error"] = {{"code", error_code(kNotFound)}, {"message", "no file with this sha256"}};
    return json(dump(doc), kNotFound);
  }
  return json(dump(doc));
}

}  // namespace dedupd::daemon::http
