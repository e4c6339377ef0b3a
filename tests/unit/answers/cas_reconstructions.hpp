// What the tests of the endpoint's range URLs share (download_grants_test,
// reconstruction_rewrite_test): a signing key, the CAS's v1 reconstruction
// answer with its storage URLs, the rewrite's settings, and the fill and
// the path of a rewritten URL read back.
#pragma once

#include <cstdint>
#include <string>

#include "daemon/answers/download_grants.hpp"
#include "daemon/answers/reconstruction_rewrite.hpp"

namespace dedupd::daemon::answers::download_testing {

inline const std::string kXorbA(64, 'a');
inline const std::string kXorbB = std::string(63, 'b') + "c";
inline constexpr std::uint64_t kNow = 1'800'000'000;
inline const std::string kBase = "http://127.0.0.1:8788";

DownloadKey signing_key(std::uint8_t fill);

// A CAS storage URL of `xorb` presigned for `range` until `expires`.
std::string storage_url(const std::string& xorb, const std::string& range, std::uint64_t expires);

// The CAS's v1 answer: a range of kXorbA and one of kXorbB, each its own URL.
std::string v1_answer(std::uint64_t expires);

// The rewrite at kNow, to kBase, URLs living at most 600 s.
RewriteSettings settings();

// The CAS's URL the fill of `uri` would fetch, or "" when refused.
std::string fill_origin(const DownloadGrants& grants, const std::string& uri, std::uint64_t now);

// The path and query of a rewritten URL (what nginx hands the grant check).
std::string uri_of(const std::string& url);

}  // namespace dedupd::daemon::answers::download_testing
