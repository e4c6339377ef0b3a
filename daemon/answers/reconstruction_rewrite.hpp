// The CAS's reconstruction answer with its fetch URLs renamed to the local
// Xet endpoint's own (docs/XET-ENDPOINT.md, "Downloads"): v1's `fetch_info`
// (a URL and a `url_range` per entry) and v2's `xorbs` (a URL per xorb
// covering several `ranges`), each range becoming one URL of
// DownloadGrants bound to it, and its byte range (`url_range`, `bytes`)
// the same bytes in the object the URL names: an object of their own
// (0 to length - 1), or a cached object holding them. Everything else of
// the answer is kept.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.hpp"
#include "daemon/answers/download_grants.hpp"
#include "daemon/answers/download_objects.hpp"

namespace dedupd::daemon::answers {

struct RewriteSettings {
  // What the range URLs start with: the endpoint's CAS port,
  // "http://127.0.0.1:<port>".
  std::string base;
  std::uint64_t now = 0;
  // A rewritten URL lives no longer than this, nor than the CAS's URL.
  std::uint64_t max_lifetime = 600;
  // The checked objects of the download cache and where nginx keeps them:
  // a range inside one (on its chunk boundaries) is read from it. Null: each
  // range is an object of its own.
  const DownloadObjects* objects = nullptr;
  std::filesystem::path cache_dir;
  // Whether a fleet tier host may fill the range URLs (their signatures
  // bind the CAS's URL's digest): only when the endpoint has a tier.
  DownloadGrants::Binding binding = DownloadGrants::Binding::url_digest;
};

struct RewrittenReconstruction {
  std::string json;
  std::size_t rewritten = 0;  // ranges renamed
  std::size_t kept = 0;       // left as the CAS wrote them (their URL expired already)
  std::size_t inside = 0;     // of the rewritten, read from a cached object that holds them
};

// The CAS's URL's expiry (Unix s), read from its query as the CDNs write
// it: CloudFront's `Expires`, S3's `X-Amz-Date` + `X-Amz-Expires`; nullopt
// when it names none.
std::optional<std::uint64_t> presigned_expiry(std::string_view url);

// A rule "reconstruction.*" error when `cas_json` is not a reconstruction
// answer (the endpoint then passes the CAS's answer on as it came).
base::Result<RewrittenReconstruction> rewrite_reconstruction(std::string_view cas_json, const RewriteSettings& settings,
                                                             DownloadGrants& grants);

}  // namespace dedupd::daemon::answers
