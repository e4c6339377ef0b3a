// What a passed descriptor is, asked of real sockets of each kind dedupd
// may be given (and of things that are no socket).
#include "daemon/systemd/socket_kind.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

namespace dedupd::daemon::systemd {
namespace {

// "<family> <type> listening|idle", "not a socket", or "error: <message>".
std::string kind_of(int fd) {
  auto k = socket_kind(fd);
  if (!k) return "error: " + k.error().message;
  if (!k->socket) return "not a socket";
  const std::string family = k->family == AF_UNIX ? "unix" : k->family == AF_INET ? "inet" : std::to_string(k->family);
  const std::string type = k->type == SOCK_STREAM  ? "stream"
                           : k->type == SOCK_DGRAM ? "dgram"
                                                   : std::to_string(k->type);
  return family + " " + type + (k->listening ? " listening" : " idle");
}

// Bound to a name the kernel picks in the abstract namespace: no file.
int autobound(int type) {
  const int fd = ::socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a.sun_family) != 0) return -1;
  return fd;
}

TEST(SocketKind, UnixSocketsByTypeAndWhetherTheyListen) {
  const int listening = autobound(SOCK_STREAM);
  ASSERT_GE(listening, 0);
  ASSERT_EQ(::listen(listening, 4), 0);
  EXPECT_EQ(kind_of(listening), "unix stream listening");
  const int bound = autobound(SOCK_STREAM);
  EXPECT_EQ(kind_of(bound), "unix stream idle");
  const int dgram = autobound(SOCK_DGRAM);
  EXPECT_EQ(kind_of(dgram), "unix dgram idle");
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair), 0);
  EXPECT_EQ(kind_of(pair[0]), "unix dgram idle") << "unbound, its name still says its family";
  for (int fd : {listening, bound, dgram, pair[0], pair[1]}) ::close(fd);
}

TEST(SocketKind, AnInternetSocketSaysItsFamily) {
  const int tcp = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(tcp, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(tcp, 4), 0);
  EXPECT_EQ(kind_of(tcp), "inet stream listening");
  ::close(tcp);
}

TEST(SocketKind, APipeIsNoSocketAndAClosedDescriptorAnError) {
  int ends[2];
  ASSERT_EQ(::pipe2(ends, O_CLOEXEC), 0);
  EXPECT_EQ(kind_of(ends[0]), "not a socket");
  ::close(ends[0]);
  ::close(ends[1]);
  EXPECT_EQ(kind_of(ends[0]), "error: fd " + std::to_string(ends[0]) + ": fstat: Bad file descriptor");
}

}  // namespace
}  // namespace dedupd::daemon::systemd
