#include "daemon/loop/timer.hpp"

#include <poll.h>

#include <gtest/gtest.h>

namespace dedupd::daemon {
namespace {

using namespace std::chrono_literals;

bool readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) == 1;
}

TEST(Timer, FiresOnceAfterTheDelay) {
  Timer t;
  EXPECT_FALSE(readable(t.fd(), 0));
  t.arm(10ms);
  EXPECT_TRUE(readable(t.fd(), 5000));
  t.acknowledge();
  EXPECT_FALSE(readable(t.fd(), 30));
}

TEST(Timer, ZeroDelayFiresAtOnceAndDisarmCancels) {
  Timer t;
  t.arm(0ms);
  EXPECT_TRUE(readable(t.fd(), 5000));
  t.acknowledge();
  t.arm(20ms);
  t.disarm();
  EXPECT_FALSE(readable(t.fd(), 60));
}

TEST(Timer, RearmingReplacesTheDeadline) {
  Timer t;
  t.arm(std::chrono::hours(1));
  t.arm(5ms);
  EXPECT_TRUE(readable(t.fd(), 5000));
}

}  // namespace
}  // namespace dedupd::daemon
