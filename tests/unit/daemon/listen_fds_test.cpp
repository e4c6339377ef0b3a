// The sockets systemd passes (dedupd.socket: the API's stream socket and
// the learning socket's datagrams), told apart by type, whatever their
// order; anything else is an error that names what was passed. Each case
// runs in a child process: activation reads the environment and the
// descriptors from 3 on, as a started service finds them.
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "daemon/systemd/listen_fds.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/unit/daemon/in_child.hpp"

namespace dedupd::daemon::systemd {
namespace {

enum class Kind { stream, dgram, tcp, pipe };

int make_socket(Kind kind, const std::string& path) {
  if (kind == Kind::pipe) {
    int ends[2];
    return ::pipe(ends) == 0 ? ends[0] : -1;
  }
  if (kind == Kind::tcp) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 4) != 0) return -1;
    return fd;
  }
  int fd = ::socket(AF_UNIX, kind == Kind::stream ? SOCK_STREAM : SOCK_DGRAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return -1;
  if (kind == Kind::stream && ::listen(fd, 4) != 0) return -1;
  return fd;
}

// What activated_sockets() says in a process given `kinds` at fd 3, 4...
// and LISTEN_FDS (the count of `kinds` unless given): "api=A learn=L",
// "none", or "error: <message>".
std::string passed(const std::vector<Kind>& kinds, std::optional<std::string> listen_fds = std::nullopt) {
  tests::TempDir dir("listen-fds");
  return daemon::testing::in_child([&] {
    std::vector<int> made;
    for (std::size_t i = 0; i < kinds.size(); ++i)
      made.push_back(make_socket(kinds[i], dir.path() + "/s" + std::to_string(i)));
    // Above the range they go to, then into place from fd 3.
    for (int& fd : made) fd = ::fcntl(fd, F_DUPFD, 20);
    for (std::size_t i = 0; i < made.size(); ++i) ::dup2(made[i], int(3 + i));
    if (!kinds.empty() || listen_fds) {
      ::setenv("LISTEN_FDS", listen_fds.value_or(std::to_string(kinds.size())).c_str(), 1);
      ::setenv("LISTEN_PID", std::to_string(::getpid()).c_str(), 1);
    }
    auto got = activated_sockets();
    if (auto* s = std::get_if<ActivatedSockets>(&got))
      return "api=" + std::to_string(s->api) + " learn=" + std::to_string(s->learn);
    if (std::holds_alternative<NoActivation>(got)) return std::string("none");
    return "error: " + std::get<ActivationError>(got).message;
  });
}

TEST(ListenFds, TheApiSocketAndTheLearningSocketInEitherOrder) {
  EXPECT_EQ(passed({Kind::stream, Kind::dgram}), "api=3 learn=4");
  EXPECT_EQ(passed({Kind::dgram, Kind::stream}), "api=4 learn=3");
  EXPECT_EQ(passed({Kind::stream}), "api=3 learn=-1");  // a unit of the previous release
  EXPECT_EQ(passed({}), "none");
}

TEST(ListenFds, AnythingElseIsAnErrorNamingIt) {
  EXPECT_NE(passed({Kind::stream, Kind::stream}).find("two stream sockets"), std::string::npos);
  EXPECT_NE(passed({Kind::stream, Kind::dgram, Kind::dgram}).find("two datagram sockets"), std::string::npos);
  EXPECT_NE(passed({Kind::dgram}).find("no listening AF_UNIX stream socket"), std::string::npos);
  const std::string tcp = passed({Kind::stream, Kind::tcp});
  EXPECT_NE(tcp.find("fd 4 is neither"), std::string::npos) << tcp;
  const std::string no_socket = passed({Kind::pipe, Kind::stream});
  EXPECT_NE(no_socket.find("fd 3 is neither"), std::string::npos) << no_socket;
}

TEST(ListenFds, ABadCountIsAnErrorNamingIt) {
  EXPECT_EQ(passed({Kind::stream}, "1x"), "error: LISTEN_FDS=\"1x\" is not a number of descriptors (0 to 2147483644)");
  const std::string closed = passed({Kind::stream}, "3");
  EXPECT_NE(closed.find("LISTEN_FDS=3 passes descriptor"), std::string::npos) << closed;
  EXPECT_NE(closed.find("which cannot be used: Bad file descriptor"), std::string::npos) << closed;
  EXPECT_EQ(passed({}, "0"), "none");
}

}  // namespace
}  // namespace dedupd::daemon::systemd
