// dedupd's GETs for the endpoint's downloads (libcurl), all through the
// endpoint's "way out": a Unix socket of its nginx (named per request by
// X-Dedupd-Way-Out), since dedupd itself has no network (dedupd.service:
// PrivateNetwork=yes) and holds no TLS settings. nginx asks the CAS (the
// answers dedupd rewrites on their way to the client) and the storage (the
// ranges dedupd checks before they are cached) with its own TLS settings.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <stop_token>
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

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// GET `path` (an absolute path of the way out's, e.g. "/.xet-cas/v1/...")
// through the Unix socket `way_out`. Headers are sent as given (the
// client's Authorization and Range); the body is kept up to `max_body`
// bytes, past which it is an error.
base::Result<UpstreamAnswer> upstream_get(const std::string& way_out, std::string_view path, const HeaderList& headers,
                                          std::size_t max_body, long timeout_s);

// http://127.0.0.1:<port>/... or http://localhost:<port>/...: what the
// endpoint's clients are told to ask.
bool is_loopback_http(std::string_view url);

// An absolute path of plain characters that names a socket dedupd may use
// as the way out.
bool is_way_out(std::string_view path);

// What a storage GET hands on as it comes (storage_get).
struct StorageStream {
  // The status, once the storage's headers are in (each header block's:
  // only a 2xx one is followed by the range's bytes). False stops the
  // transfer.
  std::function<bool(long status)> head;
  // Each piece of a 2xx body. False stops the transfer.
  std::function<bool(std::span<const std::uint8_t>)> body;
  // The transfer stops (an error) once this is requested, within about a
  // second even while nothing comes.
  std::stop_token stop;
};

// One GET of a storage URL the CAS signed (an endpoint fill), asked of the
// way out's /.xet-storage with the URL in X-Xet-Storage-Url (a header:
// never in a log) and `range` as the Range header, handed on as it comes
// (`stream`). The status when the transfer ended, also when `stream`
// stopped it; an error when it broke; the URL is never in an error's
// message (it is a secret until it expires).
base::Result<long> storage_get(const std::string& way_out, const std::string& url, const std::string& range,
                               long timeout_s, const StorageStream& stream);

}  // namespace dedupd::daemon::api::routes
