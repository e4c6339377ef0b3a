// The sockets systemd passes (dedupd.socket: the API's stream socket and
// the learning socket's datagrams), told apart by type, whatever their
// order; anything else is an error that names what was passed. Each case
// runs in a child process: sd_listen_fds reads the environment and the
// descriptors from 3 on, as a started service finds them.
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "daemon/systemd/listen_fds.hpp"
#include "tests/support/temp_dir.hpp"

namespace dedupd::daemon::systemd {
namespace {

enum class Kind { stream, dgram, tcp };

int make_socket(Kind kind, const std::string& path) {
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

// What activated_sockets() says in a process given `kinds` at fd 3, 4...:
// "api=A learn=L", "none", or "error: <message>".
std::string passed(const std::vector<Kind>& kinds) {
  tests::TempDir dir("listen-fds");
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return "pipe failed";
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipe_fds[0]);
    // Out of the way of the descriptors placed from 3 on.
    const int report = ::fcntl(pipe_fds[1], F_DUPFD, 40);
    std::vector<int> made;
    for (std::size_t i = 0; i < kinds.size(); ++i)
      made.push_back(make_socket(kinds[i], dir.path() + "/s" + std::to_string(i)));
    // Above the range they go to, then into place from fd 3.
    for (int& fd : made) fd = ::fcntl(fd, F_DUPFD, 20);
    for (std::size_t i = 0; i < made.size(); ++i) ::dup2(made[i], int(3 + i));
    if (!kinds.empty()) {
      ::setenv("LISTEN_FDS", std::to_string(kinds.size()).c_str(), 1);
      ::setenv("LISTEN_PID", std::to_string(::getpid()).c_str(), 1);
    }
    auto got = activated_sockets();
    std::string out;
    if (auto* s = std::get_if<ActivatedSockets>(&got))
      out = "api=" + std::to_string(s->api) + " learn=" + std::to_string(s->learn);
    else if (std::holds_alternative<NoActivation>(got)) out = "none";
    else out = "error: " + std::get<ActivationError>(got).message;
    [[maybe_unused]] auto w = ::write(report, out.data(), out.size());
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  std::string out;
  char buf[512];
  for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) > 0;) out.append(buf, std::size_t(n));
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return out;
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
}

}  // namespace
}  // namespace dedupd::daemon::systemd
