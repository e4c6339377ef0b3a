// How a failure of the daemon's side of the seam (daemon/api/service.hpp)
// reaches an HTTP client: its rule picks the status and the documented
// error code (docs/API.md, "Errors"), so the caller learns whether to fix
// its request, try again, or read the daemon's log.
#pragma once

#include <string_view>

#include "base/result.hpp"
#include "daemon/api/http/http.hpp"

namespace dedupd::daemon::api::render {

struct FailureStatus {
  unsigned status;
  std::string_view code;
};

// The status of an error by its rule: the caller's request (400), an unknown
// thing (404), a dependency out of reach or a full disk (503 "unavailable",
// the daemon stays up), an admin action still queued on the work loop when
// the request timed out (503 "in_progress": it still runs, so a client must
// not simply repeat it), the daemon's own fault (500). A rule of no part the daemon
// knows is `otherwise` (an upload's validation rules: 422).
FailureStatus failure_status(const base::Error& e, FailureStatus otherwise = {http::kInternal, "internal"});

// The response for it: {"error": {"code", "message"}} with the rule in the
// message; a 5xx is also logged with its request.
http::Response failure(const http::Request& request, const base::Error& e,
                       FailureStatus otherwise = {http::kInternal, "internal"});

}  // namespace dedupd::daemon::api::render
