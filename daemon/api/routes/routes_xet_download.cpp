// The local Xet endpoint's downloads (docs/XET-ENDPOINT.md, "Downloads"),
// both asked by its nginx only (Access::endpoint):
//   GET /v1/xet-endpoint/reconstruction  the client's reconstruction query,
//       asked of the CAS through the endpoint's pass-through (the URL in
//       X-Dedupd-Upstream, the client's Authorization and Range with it),
//       its fetch URLs renamed to the endpoint's (X-Dedupd-Base); a CAS
//       answer other than a 200 goes back as it came, and so does one that
//       is no reconstruction. Anything dedupd cannot do is a 5xx, on which
//       nginx asks the CAS itself (fail open).
//   GET /v1/xet-endpoint/grant  nginx's auth_request for a range URL
//       (X-Dedupd-Uri, the client's Range): 200 with the CAS's URL for
//       the fill (X-Dedupd-Origin, X-Dedupd-Origin-Host), or 403.
#include <ctime>

#include <spdlog/spdlog.h>

#include "daemon/answers/reconstruction_rewrite.hpp"
#include "daemon/api/routes/route_util.hpp"
#include "daemon/api/routes/routes.hpp"
#include "daemon/api/routes/upstream_get.hpp"

namespace dedupd::daemon::api::routes {

namespace {

// A reconstruction answer of 1,000 terms is a few hundred KB; a CAS answer
// past this is passed on by nginx itself.
constexpr std::size_t kMaxReconstructionBytes = 64u << 20;
constexpr long kUpstreamTimeoutS = 60;

std::uint64_t unix_now() { return std::uint64_t(std::time(nullptr)); }

std::string origin_host(std::string_view url) {
  auto scheme = url.find("://");
  if (scheme == std::string_view::npos) return {};
  url.remove_prefix(scheme + 3);
  url = url.substr(0, url.find_first_of("/?"));
  if (url.starts_with('[')) return std::string(url.substr(0, url.find(']') + 1));
  return std::string(url.substr(0, url.find(':')));
}

}  // namespace

http::Response get_xet_reconstruction(http::Context& ctx, http::Request& req) {
  answers::DownloadGrants* grants = ctx.service.download_grants();
  if (!grants)
    return http::error(http::kNotReady, "not_ready", "no key to sign range URLs with: the CAS's answer goes as it is");
  auto upstream = req.header("X-Dedupd-Upstream");
  auto base = req.header("X-Dedupd-Base");
  if (!upstream || !base || !is_loopback_http(*upstream) || !is_loopback_http(std::string(*base) + "/"))
    return http::error(http::kBadRequest,
                       "X-Dedupd-Upstream and X-Dedupd-Base must name the endpoint (http://127.0.0.1:<port>)");
  std::vector<std::pair<std::string, std::string>> headers;
  for (std::string_view name : {"Authorization", "Range"})
    if (auto v = req.header(name)) headers.emplace_back(std::string(name), std::string(*v));
  auto got = upstream_get(*upstream, headers, kMaxReconstructionBytes, kUpstreamTimeoutS);
  if (!got) {
    spdlog::warn("xet download: the reconstruction was not had through the endpoint: {}", got.error().to_string());
    return http::error(502, "bad_gateway", got.error().message);
  }
  http::Response r;
  r.status = unsigned(got->status);
  r.content_type = got->content_type.empty() ? std::string(http::kJson) : got->content_type;
  if (got->status == http::kOk) {
    answers::RewriteSettings settings{std::string(*base), unix_now()};
    auto rewritten = answers::rewrite_reconstruction(got->body, settings, *grants);
    if (rewritten) {
      r.body = std::move(rewritten->json);
      return r;
    }
    spdlog::warn("xet download: the CAS's reconstruction is passed on as it came: {}", rewritten.error().to_string());
  }
  r.body = std::move(got->body);
  return r;
}

http::Response get_xet_grant(http::Context& ctx, http::Request& req) {
  answers::DownloadGrants* grants = ctx.service.download_grants();
  if (!grants) return http::error(http::kForbidden, "no key: no range URL of this endpoint is valid");
  auto uri = req.header("X-Dedupd-Uri");
  auto range = req.header("Range");
  auto check = grants->check(uri.value_or(""), range.value_or(""), unix_now());
  if (!check.origin) {
    http::Response r =
        http::error(http::kForbidden, "range URL refused: " + std::string(answers::refusal_name(check.why)));
    r.headers.emplace_back("X-Dedupd-Refused", std::string(answers::refusal_name(check.why)));
    return r;
  }
  http::Response r;
  r.body.clear();
  r.content_type = "text/plain";
  r.headers.emplace_back("X-Dedupd-Origin", check.origin->url);
  r.headers.emplace_back("X-Dedupd-Origin-Host", origin_host(check.origin->url));
  return r;
}

}  // namespace dedupd::daemon::api::routes
