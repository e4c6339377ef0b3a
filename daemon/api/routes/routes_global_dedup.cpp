// GET /v1/chunks/default-merkledb/<hash> (and /v1/chunks/default/<hash>):
// the Xet global-dedup query, answered with a shard (daemon/answers/
// global_dedup.hpp chooses what goes in, render/global_dedup.hpp writes it).
#include <ctime>

#include "api/routes.hpp"

#include "daemon/answers/global_dedup.hpp"
#include "daemon/api/http/metrics.hpp"
#include "daemon/api/render/global_dedup.hpp"
#include "daemon/api/routes/lookup_params.hpp"
#include "daemon/api/routes/route_util.hpp"
#include "daemon/api/routes/routes.hpp"
#include "xetcache/cas_url.hpp"

namespace dedupd::daemon::api::routes {

namespace {

http::Response answer(http::Context& ctx, http::Request& req) {
  http::Response bad;
  auto chunk = hash_param(req.tail, "chunk", &bad);
  if (!chunk) return bad;
  auto lookups = open_lookups(ctx, req);
  if (!lookups) return not_ready();

  answers::GlobalDedupQuestion question{*chunk, req.via == ::dedupd::api::kViaXetEndpoint};
  if (!req.cas.empty()) {
    // The endpoint names its CAS. A name that is no CAS URL answers nothing
    // (the endpoint then asks its upstream), never everything.
    auto cas = dedupd::xetcache::normalize_cas_url(req.cas);
    if (!cas)
      return http::error(http::kBadRequest, std::string(::dedupd::api::kCasHeader) + ": \"" + req.cas.substr(0, 200) +
                                                "\" is not a CAS URL (http:// or https://, a host, no query)");
    question.cas = *cas;
  }
  auto answer = answers::answer_global_dedup(*lookups, question, std::uint64_t(std::time(nullptr)));
  if (!answer) return index_failure(req, answer.error());
  ctx.metrics.count_global_dedup(answer->reply.has_value());

  http::Response r;
  if (answer->reply) {
    std::vector<std::uint8_t> bytes = render::global_dedup_reply_bytes(std::move(*answer->reply));
    r.content_type = std::string(http::kOctets);
    r.body.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  } else {
    r = http::error(http::kNotFound, "chunk not in the index");
  }
  // The body is a shard, not JSON: the fleet's part is said in a header.
  if (answer->fleet != answers::Reach::off)
    r.headers.emplace_back("X-Dedupd-Fleet", answer->fleet == answers::Reach::answered ? "ok" : "unavailable");
  return r;
}

}  // namespace

http::Response get_global_dedup(http::Context& ctx, http::Request& req) {
  http::Response r = answer(ctx, req);
  // Whatever is not a 200 (a miss, a bad hash, a daemon still starting)
  // makes the endpoint's nginx ask the upstream CAS.
  if (req.via == ::dedupd::api::kViaXetEndpoint) ctx.metrics.count_endpoint_query(r.status == http::kOk);
  return r;
}

}  // namespace dedupd::daemon::api::routes
