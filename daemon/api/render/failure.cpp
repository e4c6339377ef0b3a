#include "daemon/api/render/failure.hpp"

#include <spdlog/spdlog.h>

#include <string>

#include "daemon/core/errors.hpp"
#include "fleet/errors.hpp"
#include "index/status.hpp"

namespace dedupd::daemon::http {

namespace {

constexpr FailureStatus kBadInput{kBadRequest, "bad_request"};
constexpr FailureStatus kUnknown{kNotFound, "not_found"};
constexpr FailureStatus kUnavailable{kNotReady, "unavailable"};
// Not "busy": that one promises nothing was done, so clients retry it; this
// action is queued and still runs.
constexpr FailureStatus kInProgress{kNotReady, "in_progress"};
constexpr FailureStatus kOwnFault{kInternal, "internal"};
constexpr FailureStatus kBadConfig{kUnprocessable, "bad_config"};

bool is(const shard::Error& e, const char* rule) { return e.rule == rule; }

}  // namespace

FailureStatus failure_status(const shard::Error& e, FailureStatus otherwise) {
  if (is(e, kRuleBusy)) return kInProgress;
  if (is(e, kRuleNoFleet)) return kUnknown;
  if (is(e, kRuleBadConfig)) return kBadConfig;
  if (is(e, kRuleInternal)) return kOwnFault;
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

Response failure(const Request& request, const shard::Error& e, FailureStatus otherwise) {
  FailureStatus s = failure_status(e, otherwise);
  if (s.status >= 500) spdlog::error("api: {} {}: {}", request.method, request.path, e.to_string());
  return error(s.status, s.code, e.to_string());
}

}  // namespace dedupd::daemon::http
