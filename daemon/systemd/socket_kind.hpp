// What a passed descriptor is, as far as telling sockets apart needs
// (sd_listen_fds(3) advises checking each one's type): whether it is a
// socket at all (fstat), its type and whether it listens (getsockopt
// SO_TYPE, SO_ACCEPTCONN), and its address family (getsockname).
#pragma once

#include <sys/socket.h>

#include "base/result.hpp"

namespace dedupd::daemon::systemd {

struct SocketKind {
  bool socket = false;     // false: a file, a pipe...; the rest is then unset
  int family = AF_UNSPEC;  // AF_UNIX, AF_INET, ...
  int type = 0;            // SOCK_STREAM, SOCK_DGRAM, ...
  bool listening = false;  // listen(2) was called on it
};

// An error only when `fd` cannot be asked (not open, a failing call).
base::Result<SocketKind> socket_kind(int fd);

}  // namespace dedupd::daemon::systemd
