#include "daemon/systemd/socket_kind.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace dedupd::daemon::systemd {

namespace {

base::Error socket_kind_error(int fd, const char* call) {
  return base::Error{"systemd.socket_kind", 0, "fd " + std::to_string(fd) + ": " + call + ": " + std::strerror(errno),
                     false};
}

base::Result<int> socket_int_option(int fd, int option, const char* call) {
  int value = 0;
  socklen_t length = sizeof value;
  if (::getsockopt(fd, SOL_SOCKET, option, &value, &length) != 0) return socket_kind_error(fd, call);
  return value;
}

}  // namespace

base::Result<SocketKind> socket_kind(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return socket_kind_error(fd, "fstat");
  SocketKind kind;
  if (!S_ISSOCK(st.st_mode)) return kind;
  kind.socket = true;
  const auto type = socket_int_option(fd, SO_TYPE, "getsockopt(SO_TYPE)");
  if (!type) return type.error();
  kind.type = *type;
  const auto accepting = socket_int_option(fd, SO_ACCEPTCONN, "getsockopt(SO_ACCEPTCONN)");
  if (!accepting) return accepting.error();
  kind.listening = *accepting != 0;
  // Bound or not, a socket's name starts with its family.
  sockaddr_storage name{};
  socklen_t length = sizeof name;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&name), &length) != 0) return socket_kind_error(fd, "getsockname");
  kind.family = name.ss_family;
  return kind;
}

}  // namespace dedupd::daemon::systemd
