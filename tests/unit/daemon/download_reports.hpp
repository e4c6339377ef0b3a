// A range request's line as the endpoint's log format writes it, parsed
// (daemon/learn/download_report.hpp), for the tests of the reports and of
// what counts them.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "daemon/learn/download_report.hpp"

namespace dedupd::daemon::learn::testing {

// The report of `line`; a test that gives a line that is none fails.
inline DownloadReport parsed(const std::string& line) {
  auto r = parse_download_report(line);
  EXPECT_TRUE(r) << line;
  return r.value_or(DownloadReport{});
}

}  // namespace dedupd::daemon::learn::testing
