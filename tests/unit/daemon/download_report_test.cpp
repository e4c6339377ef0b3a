// The endpoint's download reports (daemon/learn/download_report.hpp): the
// access log line nginx sends for each range request, parsed (told apart
// from a shard upload's report on the learning socket:
// confirm_socket_test.cpp). What counts them: download_counts_test.cpp.
#include "daemon/learn/download_report.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "daemon/learn/report.hpp"
#include "download_reports.hpp"

namespace dedupd::daemon::learn {
namespace {

using testing::parsed;

const std::string kFrame = "<190>Dec  7 12:00:00 dedupd_learn: ";

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

}  // namespace
}  // namespace dedupd::daemon::learn
