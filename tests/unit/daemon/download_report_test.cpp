// The endpoint's download reports (daemon/learn/download_report.hpp and
// download_counts.hpp): the access log line nginx sends for each range
// request, parsed (told apart from a shard upload's report on the learning
// socket: learn_test.cpp) and counted by where its bytes came from; and the
// walk of the download cache (daemon/jobs/download_cache.hpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "daemon/jobs/download_cache.hpp"
#include "daemon/learn/download_counts.hpp"
#include "daemon/learn/download_report.hpp"
#include "daemon/learn/report.hpp"
#include "tests/support/temp_dir.hpp"

namespace dedupd::daemon::learn {
namespace {

const std::string kFrame = "<190>Dec  7 12:00:00 dedupd_learn: ";

DownloadReport parsed(const std::string& line) {
  auto r = parse_download_report(line);
  EXPECT_TRUE(r) << line;
  return r.value_or(DownloadReport{});
}

TEST(DownloadReport, ReadsWhatTheEndpointsLogFormatWrites) {
  // A miss filled from the CAS's storage, in syslog framing.
  DownloadReport miss = parsed(kFrame + "xet-download 206 1048576 MISS storage.example:443 \"10.1.2.3:443\" \"206\"\n");
  EXPECT_EQ(miss.status, 206u);
  EXPECT_EQ(miss.body_bytes, 1048576u);
  EXPECT_EQ(miss.cache_status, "MISS");
  EXPECT_EQ(miss.proxy_host, "storage.example:443");
  EXPECT_EQ(miss.upstream, (std::vector<std::vector<UpstreamTry>>{{{"10.1.2.3:443", 206}}}));
  // A hit asks no upstream; a refused grant never reaches the proxy.
  DownloadReport hit = parsed("xet-download 206 4096 HIT storage.example:443 \"-\" \"-\"");
  EXPECT_EQ(hit.cache_status, "HIT");
  EXPECT_TRUE(hit.upstream.empty());
  DownloadReport refused = parsed("xet-download 403 146 - - \"-\" \"-\"");
  EXPECT_EQ(refused.cache_status, "");
  EXPECT_EQ(refused.proxy_host, "");
  // Two tier hosts that failed, then a fill of its own after the redirect.
  DownloadReport fallback = parsed(
      "xet-download 206 4096 MISS storage.example:443 \"10.0.0.1:8788, 10.0.0.2:8788 : 10.1.2.3:443\" "
      "\"502, - : 206\"");
  EXPECT_EQ(fallback.upstream, (std::vector<std::vector<UpstreamTry>>{{{"10.0.0.1:8788", 502}, {"10.0.0.2:8788", 0}},
                                                                      {{"10.1.2.3:443", 206}}}));
  // Whether the body went out whole: its bytes beside the Content-Length
  // the client was told. A report of an endpoint rendered before the field
  // says nothing of it: whole.
  EXPECT_TRUE(miss.complete());
  EXPECT_EQ(miss.content_length, std::nullopt);
  DownloadReport whole = parsed("xet-download 206 4096 HIT h \"-\" \"-\" 4096");
  EXPECT_EQ(whole.content_length, 4096u);
  EXPECT_TRUE(whole.complete());
  DownloadReport cut = parsed("xet-download 206 982669 MISS xet_tier \"10.0.0.1:8788\" \"200\" 6232238");
  EXPECT_FALSE(cut.complete());
  EXPECT_TRUE(parsed("xet-download 200 10 MISS h \"-\" \"-\" -").complete());  // no length said
}

TEST(DownloadReport, AnythingElseIsNoReport) {
  for (const std::string line : {"0123456789abcdef0123456789abcdef 200",         // a shard upload's report
                                 "xet-download 206 1 MISS h \"a\"",              // no status list
                                 "xet-download 206 1 MISS h \"a, b\" \"206\"",   // two servers, one status
                                 "xet-download 206 1 MISS h \"a : b\" \"206\"",  // two groups, one status
                                 "xet-download 99 1 MISS h \"-\" \"-\"",         // no HTTP status
                                 "xet-download 206 -1 MISS h \"-\" \"-\"",       // no byte count
                                 "xet-download 206 1 miss h \"-\" \"-\"",        // not nginx's cache status
                                 "xet-download 206 1 MISS h \"a\" \"600\"",      // no upstream status
                                 "xet-download 206 1 MISS h \"-\" \"-\" more",   // trailing words
                                 "xet-download 206 1 MISS h \"-\" \"-",          // unclosed quote
                                 "xet-download 206 1 MISS h \"-\" \"-\" x1",     // no content length
                                 "xet-download 206 1 MISS h \"-\" \"-\" 1 x",    // trailing words
                                 "<190>Dec  7 12:00:00 dedupd_learn:", "xet-download", ""})
    EXPECT_FALSE(parse_download_report(line)) << line;
  EXPECT_FALSE(parse_confirmation("xet-download 206 1 HIT h \"-\" \"-\""));
}

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

void write_file(const std::filesystem::path& p, std::size_t bytes) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << std::string(bytes, 'x');
}

// nginx's layout (levels=1:2): <dir>/<c>/<cc>/<md5 of the key>.
TEST(DownloadCache, AWalkCountsTheFilesAndWhatWentSinceTheLast) {
  tests::TempDir dir("download-cache");
  const std::filesystem::path root = dir.path();
  const std::string a(32, 'a'), b(32, 'b');
  write_file(root / "a" / "aa" / a, 10000);
  write_file(root / "b" / "bb" / b, 5000);
  write_file(root / "b" / "bb" / (b + ".0000000001"), 100);  // a temp file: counted, not followed
  std::optional<std::unordered_set<std::string>> names;
  core::XetDownloadCache c = jobs::walk_download_cache(root, names);
  ASSERT_TRUE(c.known) << c.problem;
  EXPECT_EQ(c.files, 3u);
  EXPECT_GE(c.bytes, 15100u);  // allocated blocks: at least the sizes
  EXPECT_EQ(c.evictions, 0u);
  std::filesystem::remove(root / "a" / "aa" / a);
  std::filesystem::remove(root / "b" / "bb" / (b + ".0000000001"));
  c = jobs::walk_download_cache(root, names);
  EXPECT_EQ(c.files, 1u);
  EXPECT_EQ(c.evictions, 1u);  // the temp file was renamed, not evicted
  c = jobs::walk_download_cache(root, names);
  EXPECT_EQ(c.evictions, 0u);
  // A directory it may not read: why, and no size.
  c = jobs::walk_download_cache(root / "absent", names);
  EXPECT_FALSE(c.known);
  EXPECT_NE(c.problem.find("absent"), std::string::npos) << c.problem;
}

}  // namespace
}  // namespace dedupd::daemon::learn
