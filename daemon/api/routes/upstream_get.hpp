// One GET of the endpoint's own CAS pass-through (libcurl), for the answers
// dedupd rewrites on their way to the client: only to a loopback http://
// URL (the endpoint's nginx, which holds the CAS's TLS settings), so a
// caller of the socket cannot make dedupd fetch anything else.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.hpp"

namespace dedupd::daemon::api::routes {

struct UpstreamAnswer {
  long status = 0;
  std::string content_type;
  std::string body;
};

// Headers are sent as given (the client's Authorization and Range); the
// body is kept up to `max_body` bytes, past which it is an error.
base::Result<UpstreamAnswer> upstream_get(std::string_view url,
                                          const std::vector<std::pair<std::string, std::string>>& headers,
                                          std::size_t max_body, long timeout_s);

// http://127.0.0.1:<port>/... or http://localhost:<port>/...
bool is_loopback_http(std::string_view url);

}  // namespace dedupd::daemon::api::routes
