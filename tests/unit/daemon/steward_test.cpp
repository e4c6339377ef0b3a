// Which Xet client processes may still read shards they loaded: found from
// the logs/ the client writes into its cache, checked against /proc.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <ctime>
#include <filesystem>

#include "daemon/xetcache/steward.hpp"
#include "tests/support/temp_dir.hpp"

namespace dedupd::daemon {
namespace {

namespace fs = std::filesystem;

// The client's log name for a process that started at `t` (UTC).
std::string client_log_name(std::time_t t, pid_t pid) {
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S", &tm);
  return std::string("xet_") + stamp + "123+0000_" + std::to_string(pid) + ".log";
}

TEST(LiveXetClients, ARunningProcessCountsAndAnEndedOneDoesNot) {
  tests::TempDir dir;
  fs::create_directories(dir / "logs");
  const std::time_t now = std::time(nullptr);
  tests::write_file(dir / ("logs/" + client_log_name(now + 5, ::getpid())), "");
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  tests::write_file(dir / ("logs/" + client_log_name(now, child)), "");  // ended
  tests::write_file(dir / "logs/notes.log", "");
  EXPECT_EQ(live_xet_clients(dir.path()), std::vector<pid_t>{::getpid()});
}

TEST(LiveXetClients, AReusedPidIsNotTheClientOfAnOlderLog) {
  tests::TempDir dir;
  fs::create_directories(dir / "logs");
  // This process started after 2001: a log from then names another process
  // that had this pid.
  tests::write_file(dir / ("logs/" + client_log_name(1000000000, ::getpid())), "");
  EXPECT_TRUE(live_xet_clients(dir.path()).empty());
}

TEST(LiveXetClients, NoLogsNoClients) {
  tests::TempDir dir;
  EXPECT_TRUE(live_xet_clients(dir.path()).empty());
}

}  // namespace
}  // namespace dedupd::daemon
