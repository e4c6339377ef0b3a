// What nginx reports of an upload (daemon/learn/report): its request id and
// the syslog line that carries the CAS's status.
#include "daemon/learn/report.hpp"

#include <gtest/gtest.h>

#include <string>
#include "tests/unit/daemon/learn_ids.hpp"

namespace dedupd::daemon::learn {
namespace {

using testing::kId;

TEST(LearnRequestId, IsNginxsThirtyTwoLowerCaseHexDigits) {
  EXPECT_TRUE(is_request_id(kId));
  EXPECT_FALSE(is_request_id(""));
  EXPECT_FALSE(is_request_id(kId.substr(1)));
  EXPECT_FALSE(is_request_id(kId + "0"));
  EXPECT_FALSE(is_request_id("0123456789ABCDEF0123456789abcdef"));
  EXPECT_FALSE(is_request_id("0123456789abcdef0123456789abcde/"));
}

TEST(LearnConfirmation, ParsesNginxsSyslogLineAndNothingElse) {
  auto c = parse_confirmation("<190>Nov 27 10:00:00 dedupd_learn: " + kId + " 200");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->request_id, kId);
  EXPECT_EQ(c->status, 200u);
  auto bare = parse_confirmation(kId + " 400\n");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->status, 400u);
  for (const std::string& bad : {std::string(""), kId, kId + " ", kId + " 20x", kId + " 99", kId + " 600",
                                 "<190>no colon " + kId + " 200", "x" + kId + " 200", kId + " 200 300"})
    EXPECT_FALSE(parse_confirmation(bad)) << bad;
}

}  // namespace
}  // namespace dedupd::daemon::learn
