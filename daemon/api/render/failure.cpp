#include "daemon/api/render/failure.hpp"

#include <spdlog/spdlog.h>

#include <string>

#include "daemon/core/errors.hpp"
#include "fleet/errors.hpp"
#include "index/status.hpp"

namespace dedupd::daemon::api::render {

namespace {

constexpr FailureStatus kBadInput{http::kBadRequest, "bad_request"};
constexpr FailureStatus kUnknown{http::kNotFound, "not_found"};
constexpr FailureStatus kUnavailable{http::kNotReady, "unavailable"};
// Not "busy": that one promises nothing was done, so clients retry it; this
// action is queued and still runs.
constexpr FailureStatus kInProgress{http::kNotReady, "in_progress"};
constexpr FailureStatus kOwnFault{http::kInternal, "internal"};
constexpr FailureStatus kBadConfig{http::kUnprocessable, "bad_config"};

bool is(const base::Error& e, const char* rule) { return e.rule == rule; }

}  // namespace

FailureStatus failure_status(const base::Error& e, FailureStatus otherwise) {
  if (is(e, core::kRuleBusy)) return kInProgress;
  if (is(e, core::kRuleNoFleet)) return kUnknown;
  if (is(e, core::kRuleBadConfig)) return kBadConfig;
  if (is(e, core::kRuleInternal)) return kOwnFault;
  if (is(e, index::kRuleArgument) || is(e, fleet::kRuleArgument)) return kBadInput;
  // The disk, not the daemon: it answers again once there is room.
  if (is(e, index::kRuleNoSpace) || is(e, index::kRuleMapFull)) return kUnavailable;
  // The fleet database is down, slow, or not at a schema this daemon uses.
  if (is(e, fleet::kRuleConnect) || is(e, fleet::kRuleTimeout) || is(e, fleet::kRuleUnavailable) ||
      is(e, fleet::kRuleSchema) || is(e, fleet::kRuleSchemaNewer))
    return kUnavailable;
  if (e.rule.starts_with("index.") || e.rule.starts_with("fleet.") || e.rule.starts_with("daemon.")) return kOwnFault;
  return otherwise;
}

http::Response failure(const http::Request& request, const base::Error& e, FailureStatus otherwise) {
  FailureStatus s = failure_status(e, otherwise);
  if (s.status >= 500) spdlog::error("api: {} {}: {}", request.method, request.path, e.to_string());
  return http::error(s.status, s.code, e.to_string());
}

}  // namespace dedupd::daemon::api::render
