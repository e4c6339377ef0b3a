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

namespace dedupd::daemon::http {

Response get_chunk(Context& ctx, Request& req) {
  Response bad;
  auto hash = hash_param(req.tail, "chunk", &bad);
  if (!hash) return bad;
  auto lookups = open_lookups(ctx, req);
  if (!lookups) return not_ready();
  auto answer = answers::answer_chunk(*lookups, *hash);
  if (!answer) return index_failure(req, answer.error());
  const bool found = answer->found();
  ctx.metrics.count_lookups(1, found ? 1 : 0);
  return json(chunk_json(*hash, *answer), found ? kOk : kNotFound);
}

Response post_chunk_batch(Context& ctx, Request& req) {
  LookupFields fields;
  if (auto list = req.query_value("fields")) {
    auto parsed = parse_lookup_fields(*list);
    if (auto* message = std::get_if<std::string>(&parsed)) return error(kBadRequest, *message);
    fields = std::get<LookupFields>(parsed);
  }
  const bool lines = req.accept.find(kNdjson) != std::string::npos;

  std::shared_ptr<HashSpool> hashes = req.hashes;
  if (!hashes) {
    // A body handed over whole (tests, fuzzing): parsed the same way.
    hashes = std::make_shared<HashSpool>();
    HashStreamParser parser(HashStreamParser::form_of(req.content_type));
    std::string_view text(reinterpret_cast<const char*>(req.body.data()), req.body.size());
    if (!parser.feed(text, *hashes) || !parser.finish(*hashes)) {
      if (!hashes->error().empty()) return error(kNotReady, "busy", hashes->error());
      return error(kBadRequest, parser.error());
    }
  }

  auto lookups = open_lookups(ctx, req);
  if (!lookups) return not_ready();
  Response r;
  r.content_type = lines ? kNdjson : kJson;
  auto blocks = std::make_unique<answers::ChunkBlocks>(*lookups, [hashes] { return hashes->next(); });
  r.stream = std::make_shared<ChunkStream>(
      std::move(blocks), fields, lines ? ChunkStream::Shape::lines : ChunkStream::Shape::document, ctx.metrics);
  return r;
}

}  // namespace dedupd::daemon::http
