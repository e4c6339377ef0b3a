// GET /v1/chunk/<hash> and POST /v1/chunk: where chunks live. A batch is
// answered as a stream (render/chunk_stream.hpp), so its size is not bounded.
#include "daemon/answers/chunk.hpp"
#include "daemon/answers/chunk_batch.hpp"
#include "daemon/api/http/batch_request.hpp"
#include "daemon/api/http/hash_spool.hpp"
#include "daemon/api/http/metrics.hpp"
#include "daemon/api/render/chunk_stream.hpp"
#include "daemon/api/render/lookup_json.hpp"
#include "daemon/api/routes/lookup_params.hpp"
#include "daemon/api/routes/route_util.hpp"
#include "daemon/api/routes/routes.hpp"

namespace dedupd::daemon::api::routes {

http::Response get_chunk(http::Context& ctx, http::Request& req) {
  http::Response bad;
  auto hash = hash_param(req.tail, "chunk", &bad);
  if (!hash) return bad;
  auto lookups = open_lookups(ctx, req);
  if (!lookups) return not_ready();
  auto answer = answers::answer_chunk(*lookups, *hash);
  if (!answer) return index_failure(req, answer.error());
  const bool found = answer->found();
  ctx.metrics.count_lookups(1, found ? 1 : 0);
  return http::json(render::chunk_json(*hash, *answer), found ? http::kOk : http::kNotFound);
}

http::Response post_chunk_batch(http::Context& ctx, http::Request& req) {
  render::LookupFields fields;
  if (auto list = req.query_value("fields")) {
    auto parsed = parse_lookup_fields(*list);
    if (auto* message = std::get_if<std::string>(&parsed)) return http::error(http::kBadRequest, *message);
    fields = std::get<render::LookupFields>(parsed);
  }
  const bool lines = req.accept.find(http::kNdjson) != std::string::npos;

  std::shared_ptr<http::HashSpool> hashes = req.hashes;
  if (!hashes) {
    // A body handed over whole (tests, fuzzing): parsed the same way.
    hashes = std::make_shared<http::HashSpool>();
    http::HashStreamParser parser(http::HashStreamParser::form_of(req.content_type));
    std::string_view text(reinterpret_cast<const char*>(req.body.data()), req.body.size());
    if (!parser.feed(text, *hashes) || !parser.finish(*hashes)) {
      if (!hashes->error().empty()) return http::error(http::kNotReady, "busy", hashes->error());
      return http::error(http::kBadRequest, parser.error());
    }
  }

  auto lookups = open_lookups(ctx, req);
  if (!lookups) return not_ready();
  http::Response r;
  r.content_type = lines ? http::kNdjson : http::kJson;
  auto blocks = std::make_unique<answers::ChunkBlocks>(*lookups, [hashes] { return hashes->next(); });
  r.stream = std::make_shared<render::ChunkStream>(
      std::move(blocks), fields, lines ? render::ChunkStream::Shape::lines : render::ChunkStream::Shape::document,
      ctx.metrics);
  return r;
}

}  // namespace dedupd::daemon::api::routes
