#include "cas_reconstructions.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>

namespace dedupd::daemon::answers::download_testing {

using XJson = nlohmann::json;

DownloadKey signing_key(std::uint8_t fill) {
  DownloadKey k;
  k.fill(fill);
  return k;
}

std::string storage_url(const std::string& xorb, const std::string& range, std::uint64_t expires) {
  return "https://storage.example/xorbs/default/" + xorb + "?X-Xet-Signed-Range=" + range +
         "&Expires=" + std::to_string(expires) + "&Signature=abc";
}

std::string v1_answer(std::uint64_t expires) {
  XJson doc = {{"offset_into_first_range", 0},
               {"terms",
                {{{"hash", kXorbA}, {"unpacked_length", 100}, {"range", {{"start", 0}, {"end", 2}}}},
                 {{"hash", kXorbB}, {"unpacked_length", 50}, {"range", {{"start", 3}, {"end", 4}}}}}},
               {"fetch_info",
                {{kXorbA,
                  {{{"range", {{"start", 0}, {"end", 2}}},
                    {"url", storage_url(kXorbA, "bytes%3D0-999", expires)},
                    {"url_range", {{"start", 0}, {"end", 999}}}}}},
                 {kXorbB,
                  {{{"range", {{"start", 3}, {"end", 4}}},
                    {"url", storage_url(kXorbB, "bytes%3D4000-4499", expires)},
                    {"url_range", {{"start", 4000}, {"end", 4499}}}}}}}}};
  return doc.dump();
}

RewriteSettings settings() {
  RewriteSettings s;
  s.base = kBase;
  s.now = kNow;
  s.max_lifetime = 600;
  return s;
}

std::string fill_origin(const DownloadGrants& grants, const std::string& uri, std::uint64_t now) {
  std::optional<Origin> origin;
  auto c = grants.check_fill(uri, now, origin);
  return c.grant && origin ? origin->url : std::string();
}

std::string uri_of(const std::string& url) {
  EXPECT_TRUE(url.starts_with(kBase + "/xet/o/")) << url;
  return url.substr(kBase.size());
}

}  // namespace dedupd::daemon::answers::download_testing
