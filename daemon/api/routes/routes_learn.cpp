// POST /v1/xet-endpoint/shards/<request id>: a shard a client uploaded
// through the local Xet endpoint, mirrored by its nginx (docs/XET-ENDPOINT.md,
// "Learning"), held until the CAS's status for it comes on the learning
// socket. Only the endpoint may send it (Access::endpoint): a shard learned
// here answers other people's uploads.
#include "api/routes.hpp"
#include "daemon/api/routes/route_util.hpp"
#include "daemon/api/routes/routes.hpp"

namespace dedupd::daemon::api::routes {

http::Response post_learn_shard(http::Context& ctx, http::Request& req) {
  if (req.body.empty())
    return http::error(http::kBadRequest, "empty body: the endpoint mirrors the shard it passes on");
  if (req.cas.empty())
    return http::error(http::kBadRequest,
                       std::string(::dedupd::api::kCasHeader) + " missing: which CAS was the shard sent to?");
  core::LearnHold held = ctx.service.learn_hold(req.tail, req.cas, std::move(req.body));
  using O = core::LearnHold::Outcome;
  switch (held.outcome) {
    case O::held:
      return http::json(R"({"held":true})", http::kAccepted);
    case O::bad_id:
      return http::error(http::kBadRequest,
                         "\"" + req.tail.substr(0, 64) + "\" is not the endpoint's request id (32 hex digits)");
    case O::bad_cas:
      return http::error(http::kBadRequest, std::string(::dedupd::api::kCasHeader) + ": \"" + req.cas.substr(0, 200) +
                                                "\" is not a CAS URL");
    case O::not_a_shard:
      return http::error(http::kUnprocessable, "the mirrored body is not a shard: " +
                                                   (held.error ? held.error->to_string() : std::string("invalid")));
    case O::duplicate:
      return http::error(http::kConflict, "conflict", "request " + req.tail + " sent its shard already");
    case O::full:
      return http::error(http::kNotReady, "busy",
                         "too many shards wait for their CAS's status; this one is not learned");
    case O::off:
      break;
  }
  return http::error(http::kNotReady, "not_ready",
                     "learning is off: no local Xet endpoint is configured (xet_endpoint.config)");
}

}  // namespace dedupd::daemon::api::routes
