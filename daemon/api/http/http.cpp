#include "daemon/api/http/http.hpp"

#include <nlohmann/json.hpp>

namespace dedupd::daemon::api::http {

std::string_view error_code(unsigned status) {
  switch (status) {
    case kBadRequest:
      return "bad_request";
    case kForbidden:
      return "forbidden";
    case kNotFound:
      return "not_found";
    case kMethodNotAllowed:
      return "method_not_allowed";
    case kConflict:
      return "conflict";
    case kTooLarge:
      return "too_large";
    case kUnprocessable:
      return "invalid_shard";
    case kNotReady:
      return "not_ready";
    default:
      return "internal";
  }
}

Response error(unsigned status, std::string_view message) { return error(status, error_code(status), message); }

Response error(unsigned status, std::string_view code, std::string_view message) {
  nlohmann::json doc = {{"error", {{"code", code}, {"message", message}}}};
  // Messages can quote untrusted input; replace rather than throw on bad UTF-8.
  return json(doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), status);
}

Response json(std::string body, unsigned status) {
  Response r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

}  // namespace dedupd::daemon::api::http
