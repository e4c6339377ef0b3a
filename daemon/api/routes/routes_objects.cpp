// GET /v1/xorb/<hash>, /v1/file/<hash>, /v1/sha256/<hex>.
#include "daemon/answers/file.hpp"
#include "daemon/answers/sha256.hpp"
#include "daemon/answers/xorb.hpp"
#include "daemon/api/render/lookup_json.hpp"
#include "daemon/api/routes/lookup_params.hpp"
#include "daemon/api/routes/route_util.hpp"
#include "daemon/api/routes/routes.hpp"

namespace dedupd::daemon::api::routes {

http::Response get_xorb(http::Context& ctx, http::Request& req) {
  http::Response bad;
  auto hash = hash_param(req.tail, "xorb", &bad);
  if (!hash) return bad;
  auto lookups = open_lookups(ctx, req);
  if (!lookups) return not_ready();
  auto answer = answers::answer_xorb(*lookups, *hash);
  if (!answer) return index_failure(req, answer.error());
  if (!answer->found())
    return http::json(render::dump(render::not_found_json(answer->reach, "xorb not in the index")), http::kNotFound);
  return http::json(render::dump(render::xorb_answer_json(*answer)));
}

http::Response get_file(http::Context& ctx, http::Request& req) {
  http::Response bad;
  auto hash = hash_param(req.tail, "file", &bad);
  if (!hash) return bad;
  auto lookups = open_lookups(ctx, req);
  if (!lookups) return not_ready();
  auto answer = answers::answer_file(*lookups, *hash);
  if (!answer) return index_failure(req, answer.error());
  if (!answer->found())
    return http::json(render::dump(render::not_found_json(answer->reach, "file not in the index")), http::kNotFound);
  return http::json(render::dump(render::file_answer_json(*answer)));
}

http::Response get_sha256(http::Context& ctx, http::Request& req) {
  // The index stores the digest the way the shard does, whose Xet string
  // form is the ordinary hex (FORMAT-NOTES), so the Xet parser applies.
  auto digest = shard::Hash::parse(req.tail);
  if (!digest) return http::error(http::kBadRequest, "malformed sha256: " + digest.error().message);
  auto lookups = open_lookups(ctx, req);
  if (!lookups) return not_ready();
  auto answer = answers::answer_sha256(*lookups, *digest);
  if (!answer) return index_failure(req, answer.error());
  return http::json(render::dump(render::sha256_answer_json(*digest, *answer)),
                    answer->files.empty() ? http::kNotFound : http::kOk);
}

}  // namespace dedupd::daemon::api::routes
