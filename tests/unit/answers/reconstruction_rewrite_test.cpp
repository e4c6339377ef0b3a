// The endpoint's download rewrite (daemon/answers/reconstruction_rewrite.hpp):
// the CAS's answers of both shapes renamed to range URLs of the grants
// (download_grants_test.cpp checks those URLs), and what is not a
// reconstruction refused.
#include "daemon/answers/reconstruction_rewrite.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cas_reconstructions.hpp"

// In the namespace of the helpers (cas_reconstructions.hpp), so their
// names are found before another test's of the same name in a unity batch;
// named, not anonymous, for the same reason.
namespace dedupd::daemon::answers::download_testing {
namespace reconstruction_rewrite_test {

using XJson = nlohmann::json;

std::string v2_answer(std::uint64_t expires) {
  XJson doc = {{"offset_into_first_range", 7},
               {"terms", XJson::array()},
               {"xorbs",
                {{kXorbA,
                  {{{"url", storage_url(kXorbA, "bytes%3D0-999,2000-2999", expires)},
                    {"ranges",
                     {{{"chunks", {{"start", 0}, {"end", 2}}}, {"bytes", {{"start", 0}, {"end", 999}}}},
                      {{"chunks", {{"start", 5}, {"end", 7}}}, {"bytes", {{"start", 2000}, {"end", 2999}}}}}}}}}}}};
  return doc.dump();
}

TEST(XetDownloadRewrite, V1EachUrlIsTheEndpointsBoundToItsXorbAndRangeAndTheRestIsKept) {
  DownloadGrants grants(signing_key(1), 100);
  auto out = rewrite_reconstruction(v1_answer(kNow + 3600), settings(), grants);
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ(out->rewritten, 2u);
  EXPECT_EQ(out->kept, 0u);
  XJson doc = XJson::parse(out->json);
  XJson cas = XJson::parse(v1_answer(kNow + 3600));
  EXPECT_EQ(doc["terms"], cas["terms"]);
  EXPECT_EQ(doc["offset_into_first_range"], cas["offset_into_first_range"]);
  auto a = doc["fetch_info"][kXorbA][0];
  EXPECT_EQ(a["url_range"], cas["fetch_info"][kXorbA][0]["url_range"]);
  EXPECT_EQ(a["range"], cas["fetch_info"][kXorbA][0]["range"]);
  std::string url = a["url"];
  EXPECT_TRUE(url.starts_with(kBase + "/xet/o/" + kXorbA + "/0-999?r=0-999&x=" + std::to_string(kNow + 600) + "&"))
      << url;
  EXPECT_EQ(url.find("storage.example"), std::string::npos) << "the CAS's URL must not travel to the client";

  auto ok = grants.check(uri_of(url), "bytes=0-999", kNow + 1);
  ASSERT_TRUE(ok.grant) << refusal_name(ok.why);
  EXPECT_EQ(ok.grant->xorb, kXorbA);
  EXPECT_EQ(ok.grant->start, 0u);
  EXPECT_EQ(ok.grant->end, 999u);
  EXPECT_TRUE(ok.grant->own_range());
  EXPECT_EQ(fill_origin(grants, uri_of(url), kNow + 1), cas["fetch_info"][kXorbA][0]["url"]);
  // B's object is its own range: the client asks all of it, from 0.
  auto b_entry = doc["fetch_info"][kXorbB][0];
  EXPECT_EQ(b_entry["url_range"], XJson({{"start", 0}, {"end", 499}}));
  EXPECT_TRUE(std::string(b_entry["url"]).starts_with(kBase + "/xet/o/" + kXorbB + "/4000-4499?r=4000-4499&"));
  auto b = grants.check(uri_of(b_entry["url"]), "bytes=0-499", kNow + 1);
  ASSERT_TRUE(b.grant) << refusal_name(b.why);
  EXPECT_EQ(fill_origin(grants, uri_of(b_entry["url"]), kNow + 1), cas["fetch_info"][kXorbB][0]["url"]);
  EXPECT_EQ(grants.check(uri_of(b_entry["url"]), "bytes=4000-4499", kNow + 1).why, Refusal::wrong_range);
}

TEST(XetDownloadRewrite, UrlsBindTheCasUrlOnlyWhenATierHostMayFillThem) {
  DownloadGrants grants(signing_key(1), 100);
  for (auto binding : {DownloadGrants::Binding::url_digest, DownloadGrants::Binding::none}) {
    RewriteSettings s = settings();
    s.binding = binding;
    for (const std::string& answer : {v1_answer(kNow + 3600), v2_answer(kNow + 3600)}) {
      auto out = rewrite_reconstruction(answer, s, grants);
      ASSERT_TRUE(out) << out.error().to_string();
      ASSERT_EQ(out->rewritten, 2u);
      const bool bound = binding == DownloadGrants::Binding::url_digest;
      EXPECT_EQ(out->json.find("&d=") != std::string::npos, bound) << out->json;
      XJson doc = XJson::parse(out->json);
      const XJson& entry = doc.contains("xorbs") ? doc["xorbs"][kXorbA][0] : doc["fetch_info"][kXorbA][0];
      const std::string uri = uri_of(entry["url"]);
      EXPECT_TRUE(grants.check(uri, "bytes=0-999", kNow + 1).grant) << uri;
      EXPECT_NE(fill_origin(grants, uri, kNow + 1), "");
    }
  }
}

TEST(XetDownloadRewrite, TheEndpointsUrlExpiresNoLaterThanTheCasOne) {
  DownloadGrants grants(signing_key(1), 100);
  auto out = rewrite_reconstruction(v1_answer(kNow + 30), settings(), grants);
  ASSERT_TRUE(out);
  std::string url = XJson::parse(out->json)["fetch_info"][kXorbA][0]["url"];
  EXPECT_NE(url.find("&x=" + std::to_string(kNow + 30) + "&"), std::string::npos) << url;
  EXPECT_TRUE(grants.check(uri_of(url), "bytes=0-999", kNow + 29).grant);
  EXPECT_EQ(grants.check(uri_of(url), "bytes=0-999", kNow + 30).why, Refusal::expired);
}

TEST(XetDownloadRewrite, ACasUrlExpiredAlreadyIsLeftAsItCame) {
  DownloadGrants grants(signing_key(1), 100);
  auto out = rewrite_reconstruction(v1_answer(kNow), settings(), grants);
  ASSERT_TRUE(out);
  EXPECT_EQ(out->kept, 2u);
  EXPECT_EQ(XJson::parse(out->json), XJson::parse(v1_answer(kNow)));
  EXPECT_EQ(grants.held(), 0u);
}

TEST(XetDownloadRewrite, V2EachRangeOfAMultiRangeUrlBecomesAnEntryWithItsOwnUrl) {
  DownloadGrants grants(signing_key(1), 100);
  auto out = rewrite_reconstruction(v2_answer(kNow + 3600), settings(), grants);
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ(out->rewritten, 2u);
  XJson doc = XJson::parse(out->json);
  XJson cas = XJson::parse(v2_answer(kNow + 3600));
  EXPECT_EQ(doc["offset_into_first_range"], 7);
  const XJson& entries = doc["xorbs"][kXorbA];
  ASSERT_EQ(entries.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    ASSERT_EQ(entries[i]["ranges"].size(), 1u);
    EXPECT_EQ(entries[i]["ranges"][0]["chunks"], cas["xorbs"][kXorbA][0]["ranges"][i]["chunks"]);
    // Each its own object: the client's range is all of it.
    EXPECT_EQ(entries[i]["ranges"][0]["bytes"], XJson({{"start", 0}, {"end", 999}}));
    auto ok = grants.check(uri_of(entries[i]["url"]), "bytes=0-999", kNow + 1);
    ASSERT_TRUE(ok.grant) << refusal_name(ok.why);
    EXPECT_EQ(ok.grant->start, i == 0 ? 0u : 2000u);
    EXPECT_EQ(fill_origin(grants, uri_of(entries[i]["url"]), kNow + 1), cas["xorbs"][kXorbA][0]["url"]);
  }
  // One range's URL does not serve the other range.
  EXPECT_EQ(grants.check(uri_of(entries[0]["url"]), "bytes=2000-2999", kNow + 1).why, Refusal::wrong_range);
}

TEST(XetDownloadRewrite, NotAReconstructionIsAnError) {
  DownloadGrants grants(signing_key(1), 100);
  for (const std::string& bad :
       std::vector<std::string>{"", "[]", "{}", R"({"fetch_info": [], "terms": []})", R"({"fetch_info": {"zz": []}})",
                                R"({"xorbs": {")" + kXorbA + R"(": [{"url": "u"}]}})"}) {
    auto out = rewrite_reconstruction(bad, settings(), grants);
    EXPECT_FALSE(out) << bad;
    if (!out) {
      EXPECT_TRUE(out.error().rule.starts_with("reconstruction.")) << out.error().to_string();
    }
  }
}

TEST(XetDownloadRewrite, PresignedExpiriesAreReadAsTheCdnsWriteThem) {
  EXPECT_EQ(presigned_expiry("https://h/x?Expires=1754996679&Signature=s"), 1754996679u);
  EXPECT_EQ(presigned_expiry("https://h/x?X-Amz-Date=20250101T000000Z&X-Amz-Expires=3600&X-Amz-Signature=s"),
            1735689600u + 3600);
  EXPECT_EQ(presigned_expiry("https://h/x?Signature=s"), std::nullopt);
  EXPECT_EQ(presigned_expiry("https://h/x"), std::nullopt);
}

}  // namespace reconstruction_rewrite_test
}  // namespace dedupd::daemon::answers::download_testing
