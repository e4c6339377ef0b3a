// Transport-neutral request and response values. Route handlers see only
// these, so they can be unit-tested without a socket and the MHD glue stays
// in server.cpp.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.hpp"

namespace dedupd::daemon::api::http {

class BodyPipe;
class HashSpool;
struct Response;

// HTTP status codes the API uses (docs/API.md, "Errors").
enum Status : unsigned {
  kOk = 200,
  kAccepted = 202,
  kBadRequest = 400,
  kForbidden = 403,
  kNotFound = 404,
  kMethodNotAllowed = 405,
  kConflict = 409,
  kTooLarge = 413,
  kUnprocessable = 422,
  kInternal = 500,
  kNotReady = 503,
};

struct Request {
  std::string method;
  std::string path;
  // For a prefix route ("/v1/chunk/"), what follows the prefix: the hash.
  std::string tail;
  std::vector<std::pair<std::string, std::string>> query;
  std::vector<std::uint8_t> body;
  // Headers a route may answer differently for (POST /v1/chunk).
  std::string content_type;
  std::string accept;
  // X-Dedupd-Via: who passed the request on. The local Xet endpoint's nginx
  // names itself ("xet-endpoint"), so its queries are counted apart.
  std::string via;
  // X-Dedupd-Cas: the CAS a global-dedup query is for, as sent.
  std::string cas;
  // The headers of kRouteHeaders the request had, by those names: what the
  // endpoint's download routes pass on (docs/XET-ENDPOINT.md, "Downloads").
  std::vector<std::pair<std::string_view, std::string>> headers;
  // A streamed hash batch (Body::hashes), parsed as it arrived; when null
  // the route parses `body` (tests, fuzzing).
  std::shared_ptr<HashSpool> hashes{};
  // For a handler run off the HTTP threads (a job): queues `r` as the
  // answer now, while the handler goes on (writing the BodyPipe of `r`,
  // which is sent as it comes); what the handler then returns is dropped.
  // Once. Empty where the handler runs in place (and in tests).
  std::function<void(Response&&)> answer_now{};
  // Requested when the server stops: a handler that may run long (a fill
  // from the storage) gives up.
  std::stop_token stopping{};

  // A header of kRouteHeaders; nullopt when the request had none.
  std::optional<std::string_view> header(std::string_view name) const {
    for (const auto& [k, v] : headers)
      if (k == name) return std::string_view(v);
    return std::nullopt;
  }
  // The first value of a query parameter; "" for a bare "?flag".
  std::optional<std::string_view> query_value(std::string_view key) const {
    for (const auto& [k, v] : query)
      if (k == key) return std::string_view(v);
    return std::nullopt;
  }
};

// The headers a route may read by name (Request::header); the server keeps
// no other.
inline constexpr std::string_view kRouteHeaders[] = {"Authorization",        "Range",
                                                     "X-Dedupd-Upstream",    "X-Dedupd-Base",
                                                     "X-Dedupd-Uri",         "X-Dedupd-Cache-Dir",
                                                     "X-Dedupd-Way-Out",     "X-Dedupd-Tier",
                                                     "X-Dedupd-Want-Origin", "X-Xet-Origin",
                                                     "X-Dedupd-Tier-Fills",  "X-Dedupd-Tier-Digests"};

inline constexpr std::string_view kJson = "application/json";
inline constexpr std::string_view kOctets = "application/octet-stream";
inline constexpr std::string_view kNdjson = "application/x-ndjson";
inline constexpr std::string_view kPrometheus = "text/plain; version=0.0.4; charset=utf-8";

// A body sent from an open file instead of `body` (a large export): the
// descriptor is closed when the last copy of the Response is gone.
struct FileBody {
  int fd = -1;
  std::uint64_t size = 0;
  FileBody(int f, std::uint64_t n) : fd(f), size(n) {}
  FileBody(const FileBody&) = delete;
  FileBody& operator=(const FileBody&) = delete;
  ~FileBody() {
    if (fd >= 0) ::close(fd);
  }
};

// An answer written as it is computed (chunked transfer), so none is ever
// whole in memory.
class BodyStream {
 public:
  virtual ~BodyStream() = default;
  // The next bytes of the answer into buf[0, max): how many, 0 once it is
  // complete; an error ends the answer early (the connection is closed, so
  // the client sees a truncated answer, never a short one that looks whole).
  virtual base::Result<std::size_t> read(char* buf, std::size_t max) = 0;
};

struct Response {
  unsigned status = kOk;
  std::string content_type{kJson};
  std::string body;  // bytes; a shard reply is binary
  std::vector<std::pair<std::string, std::string>> headers;
  std::shared_ptr<const FileBody> file{};  // when set, the body (and `body` is empty)
  std::shared_ptr<BodyStream> stream{};    // likewise
  // Likewise: a body of known length that another thread writes as the
  // server sends it (Request::answer_now).
  std::shared_ptr<BodyPipe> pipe{};
};

// {"error": {"code": ..., "message": ...}} with the code docs/API.md gives
// for the status.
Response error(unsigned status, std::string_view message);
std::string_view error_code(unsigned status);
// The same with another code, where one status has several causes (503:
// "not_ready" while starting, "busy" when request bodies use all their room).
Response error(unsigned status, std::string_view code, std::string_view message);

Response json(std::string body, unsigned status = kOk);

}  // namespace dedupd::daemon::api::http
