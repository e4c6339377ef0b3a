// What a lookup request asks for beyond its hash: whether the fleet may
// answer (?local_only), which fields a batch answer carries (?fields), and
// the lookups it is answered with (daemon/answers/lookups.hpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "daemon/answers/lookups.hpp"
#include "daemon/api/http/context.hpp"
#include "daemon/api/http/http.hpp"
#include "daemon/api/render/lookup_fields.hpp"

namespace dedupd::daemon::api::routes {

// ?local_only=1 (or a bare ?local_only): answer from this host's index alone.
bool local_only(const http::Request& req);

// The lookups for this request, in its scope; nullopt while the index is
// not open (answer 503).
inline std::optional<answers::Lookups> open_lookups(http::Context& ctx, const http::Request& req) {
  return answers::Lookups::open(
      ctx.answers, local_only(req) ? answers::Lookups::Scope::local_only : answers::Lookups::Scope::with_fleet);
}

// "hash,found,xorb,..." (docs/API.md); a message for a 400 otherwise.
std::variant<render::LookupFields, std::string> parse_lookup_fields(std::string_view list);

}  // namespace dedupd::daemon::api::routes
