// LISTEN_PID and LISTEN_FDS as sd_listen_fds(3) defines them: plain
// numbers, meant for the process LISTEN_PID names and no other, cleared
// once read, the passed descriptors made close-on-exec. The environment
// cases run in a child (in_child.hpp), as a started service finds it.
#include "daemon/systemd/listen_env.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

#include "daemon/systemd/env_number.hpp"
#include "tests/unit/daemon/in_child.hpp"

namespace dedupd::daemon::systemd {
namespace {

// "<count>" or "error: <message>".
std::string counted(std::optional<std::string_view> pid, std::optional<std::string_view> fds, pid_t self = 4242) {
  auto n = listen_fd_count(pid, fds, self);
  return n ? std::to_string(*n) : "error: " + n.error().message;
}

TEST(ListenEnv, NumbersAreWholeDecimalsInRange) {
  EXPECT_EQ(env_number("0", 10), 0u);
  EXPECT_EQ(env_number("007", 10), 7u);
  EXPECT_EQ(env_number("18446744073709551615", UINT64_MAX), UINT64_MAX);
  EXPECT_EQ(env_number("11", 10), std::nullopt);
  for (const char* bad : {"", " 1", "1 ", "+1", "-1", "1x", "0x1", "1.0", "18446744073709551616"})
    EXPECT_EQ(env_number(bad, UINT64_MAX), std::nullopt) << '"' << bad << '"';
}

TEST(ListenEnv, CountsTheDescriptorsPassedToThisProcess) {
  EXPECT_EQ(counted("4242", "2"), "2");
  EXPECT_EQ(counted("4242", "1"), "1");
  EXPECT_EQ(counted("4242", "0"), "0");
  EXPECT_EQ(counted("4242", "2147483644"), "2147483644");  // the last descriptor is INT_MAX
}

TEST(ListenEnv, ValuesMeantForAnotherProcessOrHalfSetPassNothing) {
  EXPECT_EQ(counted("4243", "2"), "0");
  EXPECT_EQ(counted("1", "2"), "0");
  // Another process's count is its own business, even a bad one.
  EXPECT_EQ(counted("4243", "x"), "0");
  EXPECT_EQ(counted(std::nullopt, "2"), "0");
  EXPECT_EQ(counted("4242", std::nullopt), "0");
  EXPECT_EQ(counted(std::nullopt, std::nullopt), "0");
}

TEST(ListenEnv, BadNumbersAreRefusedNamingTheVariableAndValue) {
  for (const char* bad : {"", "two", "-1", "+1", " 1", "1 ", "1x", "2147483645", "99999999999999999999"})
    EXPECT_EQ(counted("4242", bad),
              "error: LISTEN_FDS=\"" + std::string(bad) + "\" is not a number of descriptors (0 to 2147483644)");
  for (const char* bad : {"", "abc", "-4242", "4242.0", "4242 ", "99999999999"})
    EXPECT_EQ(counted(bad, "1"), "error: LISTEN_PID=\"" + std::string(bad) + "\" is not a process id");
}

// take_listen_fds() in a child given a socket pair at fd 3 and 4 (not
// close-on-exec, as systemd leaves them) and LISTEN_PID (this child's pid
// unless `pid` says otherwise), LISTEN_FDS, LISTEN_FDNAMES: "n=<count>" or
// "error: <message>", then which variables are left and which of fd 3, 4
// are close-on-exec.
std::string taken_from_env(const std::string& fds, std::optional<std::string> pid = std::nullopt) {
  return daemon::testing::in_child([&] {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) return std::string("socketpair failed");
    const int a = ::fcntl(pair[0], F_DUPFD, 20), b = ::fcntl(pair[1], F_DUPFD, 20);
    ::dup2(a, 3);
    ::dup2(b, 4);
    ::close(5);  // what a count past the pair finds
    ::setenv("LISTEN_PID", pid.value_or(std::to_string(::getpid())).c_str(), 1);
    ::setenv("LISTEN_FDS", fds.c_str(), 1);
    ::setenv("LISTEN_FDNAMES", "api:learn", 1);
    auto n = take_listen_fds();
    std::string out = n ? "n=" + std::to_string(*n) : "error: " + n.error().message;
    out += " left:";
    for (const char* name : {"LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"})
      if (std::getenv(name) != nullptr) out += std::string(" ") + name;
    out += " cloexec:";
    for (int fd : {3, 4})
      if (::fcntl(fd, F_GETFD) & FD_CLOEXEC) out += " " + std::to_string(fd);
    return out;
  });
}

TEST(ListenEnv, TakingClearsTheEnvironmentAndMakesThePassedDescriptorsCloseOnExec) {
  EXPECT_EQ(taken_from_env("2"), "n=2 left: cloexec: 3 4");
  EXPECT_EQ(taken_from_env("1"), "n=1 left: cloexec: 3") << "only what LISTEN_FDS counts";
}

TEST(ListenEnv, AnotherProcesssValuesAreClearedButItsDescriptorsLeftAlone) {
  EXPECT_EQ(taken_from_env("2", "1"), "n=0 left: cloexec:");
}

TEST(ListenEnv, ABadCountOrAClosedDescriptorIsAnErrorAndTheEnvironmentClearedAllTheSame) {
  EXPECT_EQ(taken_from_env("2x"),
            "error: LISTEN_FDS=\"2x\" is not a number of descriptors (0 to 2147483644) left: cloexec:");
  EXPECT_EQ(taken_from_env("3"),
            "error: LISTEN_FDS=3 passes descriptor 5, which cannot be used: Bad file descriptor left: cloexec: 3 4");
}

}  // namespace
}  // namespace dedupd::daemon::systemd
