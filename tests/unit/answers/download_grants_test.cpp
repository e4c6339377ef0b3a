// The endpoint's range URLs (daemon/answers/download_grants.hpp): what they
// sign, which origins they hold and for how long, and every kind of
// tampering refused (the URLs made by the rewrite of a CAS answer, as nginx
// hands them back).
#include "daemon/answers/download_grants.hpp"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <nlohmann/json.hpp>

#include "cas_reconstructions.hpp"
#include "daemon/answers/reconstruction_rewrite.hpp"

// In the namespace of the helpers (cas_reconstructions.hpp), so their
// names are found before another test's of the same name in a unity batch;
// named, not anonymous, for the same reason.
namespace dedupd::daemon::answers::download_testing {
namespace download_grants_test {

using XJson = nlohmann::json;

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
  // A digest taken away: another grant's signed line (one no tier host
  // fills), which this signature does not sign.
  EXPECT_EQ(refused(replaced(uri, uri.substr(uri.find("&d="), 3 + 32), "")), Refusal::bad_signature);
  EXPECT_EQ(refused(replaced(uri, "&d=", "&d=&d=")), Refusal::malformed);
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

TEST(XetDownloadGrants, AGrantBindingNoUrlHasNoDigestAndNoTierHostFillsIt) {
  // An endpoint without a tier signs no digest of the CAS's URL: the edge
  // fills from the URL it holds, and a tier host given one refuses.
  DownloadGrants edge(signing_key(1), 100), tier(signing_key(1), 100);
  const Origin own{kXorbA, 0, 999, storage_url(kXorbA, "bytes%3D0-999", kNow + 3600), kNow + 600, 0, 3};
  std::string uri;
  ASSERT_TRUE(edge.grant_into(
      uri, OriginView{own.xorb, own.start, own.end, own.url, own.expires, own.first_chunk, own.end_chunk}, {0, 999},
      kNow, DownloadGrants::Binding::none));
  EXPECT_EQ(uri.find("&d="), std::string::npos) << uri;
  auto checked = edge.check(uri, "bytes=0-999", kNow + 1);
  ASSERT_TRUE(checked.grant) << refusal_name(checked.why);
  EXPECT_EQ(checked.grant->origin_digest, "");
  std::optional<Origin> got;
  ASSERT_TRUE(edge.check_fill(uri, kNow + 1, got).grant);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->url, own.url);
  got.reset();
  EXPECT_EQ(tier.check_fill(uri, kNow + 1, got, own.url).why, Refusal::unknown);
  EXPECT_FALSE(got);
  // A digest added to it: not what was signed.
  const std::string with_digest =
      uri.substr(0, uri.find("&g=")) + "&d=" + std::string(32, '0') + uri.substr(uri.find("&g="));
  EXPECT_EQ(tier.check_fill(with_digest, kNow + 1, got, own.url).why, Refusal::bad_signature);
}

}  // namespace download_grants_test
}  // namespace dedupd::daemon::answers::download_testing
