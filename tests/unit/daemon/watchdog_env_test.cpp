// WATCHDOG_USEC and WATCHDOG_PID as sd_watchdog_enabled(3) defines them,
// and the interval dedupd pings at: half the time systemd waits.
#include "daemon/systemd/watchdog_env.hpp"

#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "daemon/systemd/notify.hpp"

namespace dedupd::daemon::systemd {
namespace {

using std::chrono::microseconds;

// "<usec>", "off", or "error: <message>".
std::string timeout_of(std::optional<std::string_view> usec, std::optional<std::string_view> pid, pid_t self = 4242) {
  auto t = watchdog_timeout(usec, pid, self);
  if (!t) return "error: " + t.error().message;
  return *t ? std::to_string((*t)->count()) : "off";
}

TEST(WatchdogEnv, TheTimeSystemdWaitsForThisProcess) {
  EXPECT_EQ(timeout_of("30000000", "4242"), "30000000");
  EXPECT_EQ(timeout_of("200000", std::nullopt), "200000") << "no WATCHDOG_PID: whoever reads it";
  EXPECT_EQ(timeout_of("9223372036854775807", "4242"), "9223372036854775807");
}

TEST(WatchdogEnv, OffWhenUnsetOrMeantForAnotherProcess) {
  EXPECT_EQ(timeout_of(std::nullopt, std::nullopt), "off");
  EXPECT_EQ(timeout_of(std::nullopt, "4242"), "off");
  EXPECT_EQ(timeout_of("200000", "4243"), "off");
}

TEST(WatchdogEnv, BadValuesAreRefusedNamingTheVariable) {
  for (const char* bad : {"0", "", "-1", "1e6", "200000 ", "9223372036854775808"})
    EXPECT_EQ(timeout_of(bad, "4242"),
              "error: WATCHDOG_USEC=\"" + std::string(bad) + "\" is not a time in microseconds greater than 0");
  for (const char* bad : {"", "pid", "-4242", "99999999999"})
    EXPECT_EQ(timeout_of("200000", bad), "error: WATCHDOG_PID=\"" + std::string(bad) + "\" is not a process id");
}

TEST(WatchdogEnv, TheDaemonPingsAtHalfTheTimeSystemdWaits) {
  const std::string self = std::to_string(::getpid());
  ::setenv("WATCHDOG_USEC", "200000", 1);
  ::setenv("WATCHDOG_PID", self.c_str(), 1);
  EXPECT_EQ(watchdog_ping_interval(), microseconds(100000));
  ::setenv("WATCHDOG_PID", std::to_string(::getppid()).c_str(), 1);
  EXPECT_EQ(watchdog_ping_interval(), std::nullopt);
  ::setenv("WATCHDOG_PID", self.c_str(), 1);
  ::setenv("WATCHDOG_USEC", "soon", 1);
  EXPECT_EQ(watchdog_ping_interval(), std::nullopt) << "a bad value is logged, and the watchdog off";
  ::unsetenv("WATCHDOG_USEC");
  EXPECT_EQ(watchdog_ping_interval(), std::nullopt);
  ::unsetenv("WATCHDOG_PID");
}

}  // namespace
}  // namespace dedupd::daemon::systemd
