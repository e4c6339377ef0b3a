// The endpoint's download rewrite (daemon/answers/reconstruction_rewrite.hpp)
// and its range URLs (download_grants.hpp): the CAS's answers of both
// shapes renamed, and every kind of tampering refused.
#include <gtest/gtest.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <nlohmann/json.hpp>

#include "daemon/answers/download_grants.hpp"
#include "daemon/answers/reconstruction_rewrite.hpp"

namespace dedupd::daemon::answers {
// Named, not anonymous: the unity build puts other tests' constants beside these.
namespace xet_download_test {

using XJson = nlohmann::json;

const std::string kXorbA(64, 'a');
const std::string kXorbB = std::string(63, 'b') + "c";
constexpr std::uint64_t kNow = 1'800'000'000;
const std::string kBase = "http://127.0.0.1:8788";

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

RewriteSettings settings() {
  RewriteSettings s;
  s.base = kBase;
  s.now = kNow;
  s.max_lifetime = 600;
  return s;
}

// The CAS's URL the fill of `uri` would fetch, or "" when refused.
std::string fill_origin(const DownloadGrants& grants, const std::string& uri, std::uint64_t now) {
  std::optional<Origin> origin;
  auto c = grants.check_fill(uri, now, origin);
  return c.grant && origin ? origin->url : std::string();
}

// The path and query of a rewritten URL (what nginx hands the grant check).
std::string uri_of(const std::string& url) {
  EXPECT_TRUE(url.starts_with(kBase + "/xet/o/")) << url;
  return url.substr(kBase.size());
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

class XetDownloadRefusals : public ::testing::Test {
 protected:
  void SetUp() override {
    auto out = rewrite_reconstruction(v1_answer(kNow + 3600), settings(), grants);
    ASSERT_TRUE(out);
    uri = uri_of(XJson::parse(out->json)["fetch_info"][kXorbA][0]["url"]);
    ASSERT_TRUE(grants.check(uri, "bytes=0-999", kNow).grant);
  }
  Refusal refused(const std::string& u, const std::string& range = "bytes=0-999", std::uint64_t now = kNow) {
    auto c = grants.check(u, range, now);
    EXPECT_FALSE(c.grant) << u;
    return c.why;
  }
  static std::string replaced(std::string s, const std::string& from, const std::string& to) {
    auto at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from << " in " << s;
    return s.replace(at, from.size(), to);
  }
  DownloadGrants grants{signing_key(1), 100};
  std::string uri;
};

TEST_F(XetDownloadRefusals, AnAlteredRangeXorbExpiryOrSignatureIsRefused) {
  EXPECT_EQ(refused(replaced(uri, "/0-999?", "/0-1999?"), "bytes=0-999"), Refusal::bad_signature);
  EXPECT_EQ(refused(replaced(uri, "r=0-999", "r=0-1999"), "bytes=0-1999"), Refusal::malformed);  // past the object
  EXPECT_EQ(refused(replaced(uri, "r=0-999", "r=0-99"), "bytes=0-99"), Refusal::bad_signature);
  EXPECT_EQ(refused(replaced(uri, kXorbA, kXorbB)), Refusal::bad_signature);
  EXPECT_EQ(refused(replaced(uri, "x=" + std::to_string(kNow + 600), "x=" + std::to_string(kNow + 6000))),
            Refusal::bad_signature);
  std::string g = uri.substr(uri.find("&g=") + 3);
  std::string flipped = g;
  flipped[0] = flipped[0] == '0' ? '1' : '0';
  EXPECT_EQ(refused(replaced(uri, g, flipped)), Refusal::bad_signature);
}

TEST_F(XetDownloadRefusals, AnExpiredUrlIsRefused) {
  EXPECT_EQ(refused(uri, "bytes=0-999", kNow + 600), Refusal::expired);
  EXPECT_EQ(refused(uri, "bytes=0-999", kNow + 100000), Refusal::expired);
}

TEST_F(XetDownloadRefusals, AnotherRangeHeaderIsRefused) {
  EXPECT_EQ(refused(uri, "bytes=0-998"), Refusal::wrong_range);
  EXPECT_EQ(refused(uri, "bytes=0-999,2000-2999"), Refusal::wrong_range);
  EXPECT_EQ(refused(uri, ""), Refusal::wrong_range);
}

TEST_F(XetDownloadRefusals, AUrlSignedWithAnotherKeyIsRefused) {
  DownloadGrants foreign(signing_key(2), 100);
  auto c = foreign.check(uri, "bytes=0-999", kNow);
  EXPECT_FALSE(c.grant);
  EXPECT_EQ(c.why, Refusal::bad_signature);
}

TEST_F(XetDownloadRefusals, MalformedUrlsAreRefused) {
  EXPECT_EQ(refused(uri + "&x=1"), Refusal::malformed);
  EXPECT_EQ(refused(replaced(uri, "r=0-999&", "")), Refusal::malformed);
  EXPECT_EQ(refused(replaced(uri, uri.substr(uri.find("&d="), 3 + 32), "")), Refusal::malformed);  // no digest
  EXPECT_EQ(refused(uri.substr(0, uri.find('?'))), Refusal::malformed);
  EXPECT_EQ(refused("/xet/o/" + kXorbA + "/999-0?r=999-0&x=1&k=" + std::string(32, '0') + "&g=" + std::string(32, '0')),
            Refusal::malformed);
  EXPECT_EQ(refused("/elsewhere"), Refusal::malformed);
}

TEST(XetDownloadGrants, TheSignatureIsHmacSha256OfTheUrlsFieldsWithTheKey) {
  // Any host of a fleet checks another's URLs (and one of another release,
  // while a fleet upgrades): the signature is plain HMAC-SHA256, cut to
  // 128 bits, of "xet1|xorb|s-e|first-last|expiry|id|digest".
  const DownloadKey key = signing_key(9);
  DownloadGrants grants(key, 10);
  const Origin o{kXorbA, 100, 199, storage_url(kXorbA, "bytes%3D100-199", kNow + 3600), kNow + 600, 1, 2};
  const std::string uri = grants.grant(o, {0, 999}, kNow);
  auto field = [&](const std::string& name) {
    auto at = uri.find(name + "=");
    EXPECT_NE(at, std::string::npos) << uri;
    auto end = uri.find('&', at);
    return uri.substr(at + name.size() + 1, end == std::string::npos ? std::string::npos : end - at - name.size() - 1);
  };
  const std::string message =
      "xet1|" + kXorbA + "|0-999|100-199|" + std::to_string(kNow + 600) + "|" + field("k") + "|" + field("d");
  auto hex16 = [](const unsigned char* p) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    for (int i = 0; i < 16; ++i) out += {digits[p[i] >> 4], digits[p[i] & 15]};
    return out;
  };
  unsigned char mac[32];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), int(key.size()), reinterpret_cast<const unsigned char*>(message.data()),
       message.size(), mac, &len);
  EXPECT_EQ(field("g"), hex16(mac)) << uri;
  unsigned char digest[32];
  SHA256(reinterpret_cast<const unsigned char*>(o.url.data()), o.url.size(), digest);
  EXPECT_EQ(field("d"), hex16(digest));
}

TEST(XetDownloadGrants, HeldUrlsGoOldestFirstPastTheCapacityAndAtTheirExpiry) {
  DownloadGrants grants(signing_key(1), 3);
  std::vector<std::string> uris;
  for (std::uint64_t i = 0; i < 10; ++i) {  // round the held ring three times
    Origin o{kXorbA, i * 10, i * 10 + 9, "https://s/" + std::to_string(i), kNow + 60, 0, 0};
    uris.push_back(grants.grant(o, {o.start, o.end}, kNow));
  }
  EXPECT_EQ(grants.held(), 3u);
  for (std::size_t i = 0; i < uris.size(); ++i)
    EXPECT_EQ(fill_origin(grants, uris[i], kNow), i < 7 ? "" : "https://s/" + std::to_string(i)) << i;
  // Past their expiry, each is dropped at the next grant.
  Origin late{kXorbB, 0, 9, "https://s/late", kNow + 600, 0, 0};
  const std::string last = grants.grant(late, {0, 9}, kNow + 60);
  EXPECT_EQ(grants.held(), 1u);
  EXPECT_EQ(fill_origin(grants, uris[9], kNow + 1), "");
  EXPECT_EQ(fill_origin(grants, last, kNow + 61), "https://s/late");
}

TEST(XetDownloadGrants, PastItsCapacityTheOldestOriginIsDroppedAndItsFillRefused) {
  DownloadGrants grants(signing_key(1), 2);
  std::vector<std::string> uris;
  for (std::uint64_t i = 0; i < 3; ++i) {
    Origin o{kXorbA, i * 10, i * 10 + 9, "https://s/" + std::to_string(i), kNow + 60, 0, 0};
    uris.push_back(grants.grant(o, {o.start, o.end}, kNow));
  }
  EXPECT_EQ(grants.held(), 2u);
  // Its URL still reads a cached object (the signature needs no memory),
  // but cannot fill one.
  EXPECT_TRUE(grants.check(uris[0], "bytes=0-9", kNow).grant);
  std::optional<Origin> origin;
  EXPECT_EQ(grants.check_fill(uris[0], kNow, origin).why, Refusal::unknown);
  EXPECT_EQ(fill_origin(grants, uris[2], kNow), "https://s/2");
}

TEST(XetDownloadGrants, AGrantInsideAnObjectBindsItsBytesAndCannotFill) {
  DownloadGrants grants(signing_key(1), 10);
  Origin o{kXorbA, 1000, 1499, "https://s/sub", kNow + 60, 3, 5};
  std::string uri = grants.grant(o, {400, 2999}, kNow);
  EXPECT_TRUE(uri.starts_with("/xet/o/" + kXorbA + "/400-2999?r=1000-1499&")) << uri;
  auto ok = grants.check(uri, "bytes=600-1099", kNow);
  ASSERT_TRUE(ok.grant) << refusal_name(ok.why);
  EXPECT_FALSE(ok.grant->own_range());
  EXPECT_EQ(ok.grant->first, 1000u);
  EXPECT_EQ(ok.grant->last, 1499u);
  // Nothing of the object beyond the granted bytes.
  for (const char* wider : {"bytes=0-2599", "bytes=600-1100", "bytes=599-1099", "bytes=600-"})
    EXPECT_EQ(grants.check(uri, wider, kNow).why, Refusal::wrong_range) << wider;
  std::optional<Origin> origin;
  EXPECT_EQ(grants.check_fill(uri, kNow, origin).why, Refusal::unknown);
}

TEST(XetDownloadGrants, ATierHostFillsOnlyFromTheStorageUrlTheSignatureBinds) {
  // The edge signs and holds the CAS's URL; a tier host with the fleet's
  // key holds none and takes the URL the edge passes along.
  DownloadGrants edge(signing_key(1), 100), tier(signing_key(1), 100), stranger(signing_key(2), 100);
  const Origin own{kXorbA, 0, 999, storage_url(kXorbA, "bytes%3D0-999", kNow + 3600), kNow + 600, 0, 3};
  const std::string uri = edge.grant(own, {0, 999}, kNow);
  std::optional<Origin> got;
  EXPECT_EQ(tier.check_fill(uri, kNow + 1, got).why, Refusal::unknown);
  auto ok = tier.check_fill(uri, kNow + 1, got, own.url);
  ASSERT_TRUE(ok.grant) << refusal_name(ok.why);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->url, own.url);
  EXPECT_EQ(got->start, 0u);
  EXPECT_EQ(got->end, 999u);
  // Any other URL: not fetched.
  got.reset();
  EXPECT_EQ(tier.check_fill(uri, kNow + 1, got, own.url + "&x").why, Refusal::unknown);
  EXPECT_EQ(tier.check_fill(uri, kNow + 1, got, "https://elsewhere.example/").why, Refusal::unknown);
  EXPECT_FALSE(got);
  // Another key, or the digest in the URL changed to another URL's.
  EXPECT_EQ(stranger.check_fill(uri, kNow + 1, got, own.url).why, Refusal::bad_signature);
  const auto d = uri.find("&d=") + 3;
  std::string altered = uri;
  altered[d] = altered[d] == '0' ? '1' : '0';
  EXPECT_EQ(tier.check_fill(altered, kNow + 1, got, own.url).why, Refusal::bad_signature);
  EXPECT_FALSE(got);
  // Expired.
  EXPECT_EQ(tier.check_fill(uri, kNow + 600, got, own.url).why, Refusal::expired);
  // A range read out of a bigger object is never filled, URL or not; the
  // edge hands its tier the URL of own-range grants only.
  const Origin inside{kXorbA, 100, 199, storage_url(kXorbA, "bytes%3D100-199", kNow + 3600), kNow + 600, 1, 2};
  const std::string sub = edge.grant(inside, {0, 999}, kNow);
  EXPECT_EQ(tier.check_fill(sub, kNow + 1, got, inside.url).why, Refusal::unknown);
  auto whole = edge.check_whole(uri, kNow + 1);
  ASSERT_TRUE(whole.grant);
  EXPECT_EQ(edge.origin_url(*whole.grant, kNow + 1), own.url);
  EXPECT_EQ(tier.origin_url(*whole.grant, kNow + 1), std::nullopt);
  auto part = edge.check_whole(sub, kNow + 1);
  ASSERT_TRUE(part.grant);
  EXPECT_EQ(edge.origin_url(*part.grant, kNow + 1), std::nullopt);
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

}  // namespace xet_download_test
}  // namespace dedupd::daemon::answers
