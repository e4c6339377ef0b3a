// GET /v1/xorb/<hash>, /v1/file/<hash>, /v1/sha256/<hex>.
#include <algorithm>

#include "daemon/api/json_shapes.hpp"
#include "daemon/api/route_util.hpp"
#include "daemon/api/routes.hpp"

namespace dedupd::daemon::http {

Response get_xorb(Context& ctx, Request& req) {
  Response bad;
  auto hash = hash_param(req.tail, "xorb", &bad);
  if (!hash) return bad;
  const index::Index* idx = open_index(ctx);
  if (!idx) return not_ready();
  auto forms = idx->xorb(*hash);
  if (!forms) return index_failure(req, forms.error());
  if (forms->empty()) return error(kNotFound, "xorb not in the index");

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
  if (!file->has_value()) return error(kNotFound, "file not in the index");
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
  if (files->empty()) {
    doc["error"] = {{"code", error_code(kNotFound)}, {"message", "no file with this sha256"}};
    return json(dump(doc), kNotFound);
  }
  return json(dump(doc));
}

}  // namespace dedupd::daemon::http
