// The endpoint's download counts (daemon/learn/download_counts.hpp): each
// range request's report counted by where its bytes came from, and the tier
// hosts up or down as their last try went.
#include "daemon/learn/download_counts.hpp"

#include <gtest/gtest.h>

#include "download_reports.hpp"

namespace dedupd::daemon::learn {
// Named, not anonymous: the unity build puts other tests' helpers beside these.
namespace download_counts_test {

using testing::parsed;

TEST(DownloadCounts, BytesGoToWhereTheyCameFrom) {
  DownloadCounts counts;
  counts.count(parsed("xet-download 206 1000 MISS storage.example:443 \"10.1.2.3:443\" \"206\""));
  counts.count(parsed("xet-download 206 700 HIT storage.example:443 \"-\" \"-\""));
  counts.count(parsed("xet-download 206 50 UPDATING storage.example:443 \"-\" \"-\""));
  counts.count(parsed("xet-download 206 300 MISS xet_tier \"10.0.0.1:8788\" \"206\""));
  counts.count(parsed("xet-download 403 146 - - \"-\" \"-\""));
  counts.count(parsed("xet-download 502 150 MISS storage.example:443 \"10.1.2.3:443\" \"502\""));
  // A body cut short (its upstream died in its middle): failed, its bytes
  // served nothing the client keeps.
  counts.count(parsed("xet-download 206 4000 MISS xet_tier \"10.0.0.1:8788\" \"200\" 5000"));
  const core::XetDownloadCounts n = counts.snapshot();
  EXPECT_EQ(n.bytes_internet, 1000u);
  EXPECT_EQ(n.bytes_local_cache, 750u);
  EXPECT_EQ(n.bytes_tier, 300u);
  EXPECT_EQ(n.requests_internet, 1u);
  EXPECT_EQ(n.requests_local_cache, 2u);
  EXPECT_EQ(n.requests_tier, 1u);
  EXPECT_EQ(n.requests_refused, 1u);  // its error page's bytes count nowhere
  EXPECT_EQ(n.requests_failed, 2u);
  ASSERT_EQ(n.tier.size(), 1u);
  EXPECT_EQ(n.tier[0].host, "10.0.0.1:8788");
  EXPECT_TRUE(n.tier[0].up);
}

// A tier host is up or down as the last request nginx sent it went; the
// storage is never a tier host; "no live upstreams" downs them all.
TEST(DownloadCounts, TierHostsAreUpOrDownAsTheirLastTryWent) {
  DownloadCounts counts;
  counts.count(parsed("xet-download 206 9 MISS xet_tier \"10.0.0.1:8788, 10.0.0.2:8788\" \"504, 206\""));
  auto n = counts.snapshot();
  ASSERT_EQ(n.tier.size(), 2u);
  EXPECT_FALSE(n.tier[0].up);
  EXPECT_EQ(n.tier[0].failed, 1u);
  EXPECT_TRUE(n.tier[1].up);
  EXPECT_EQ(n.bytes_tier, 9u);
  // The tier failed as a whole: the request was filled here, from the internet.
  counts.count(parsed("xet-download 206 5 MISS storage.example:443 \"10.0.0.2:8788 : 10.1.2.3:443\" \"502 : 206\""));
  n = counts.snapshot();
  EXPECT_FALSE(n.tier[1].up);
  EXPECT_EQ(n.tier[1].failed, 1u);
  EXPECT_EQ(n.bytes_internet, 5u);
  EXPECT_EQ(n.tier.size(), 2u);
  counts.count(parsed("xet-download 206 9 MISS xet_tier \"10.0.0.1:8788\" \"403\""));  // an answer
  EXPECT_TRUE(counts.snapshot().tier[0].up);
  counts.count(parsed("xet-download 206 5 MISS storage.example:443 \"xet_tier : 10.1.2.3:443\" \"502 : 206\""));
  n = counts.snapshot();
  EXPECT_FALSE(n.tier[0].up);
  EXPECT_FALSE(n.tier[1].up);
  EXPECT_EQ(n.tier.size(), 2u);
}

}  // namespace download_counts_test
}  // namespace dedupd::daemon::learn
