// dedupd's GETs for the endpoint's downloads (libcurl): the endpoint's own
// CAS pass-through, for the answers dedupd rewrites on their way to the
// client: only to a loopback http:// URL (the endpoint's nginx, which holds
// the CAS's TLS settings), so a caller of the socket cannot make dedupd
// fetch anything else; and the storage's signed URLs dedupd holds, for the
// cache's fills.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
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

// One GET of a storage URL the CAS signed (an endpoint fill): `range` as the
// Range header, TLS verified against `ca_file` (empty: the system's CAs),
// no redirect followed. Each piece of the body goes to `sink` as it comes;
// a false from it stops the transfer (an error). The status when the
// transfer ended; the URL is never in an error's message (it is a secret
// until it expires).
base::Result<long> origin_get(const std::string& url, const std::string& range, const std::string& ca_file,
                              long timeout_s, const std::function<bool(std::span<const std::uint8_t>)>& sink);

}  // namespace dedupd::daemon::api::routes
