#include "daemon/systemd/listen_fds.hpp"

#include <sys/socket.h>

#include "daemon/systemd/listen_env.hpp"
#include "daemon/systemd/socket_kind.hpp"

namespace dedupd::daemon::systemd {

std::variant<ActivatedSockets, NoActivation, ActivationError> activated_sockets() {
  const auto count = take_listen_fds();
  if (!count) return ActivationError{count.error().message};
  if (*count == 0) return NoActivation{};
  ActivatedSockets out;
  for (int fd = kFirstListenFd; fd < kFirstListenFd + *count; ++fd) {
    const std::string which = "the socket systemd passed as fd " + std::to_string(fd);
    const auto kind = socket_kind(fd);
    if (!kind) return ActivationError{"checking " + which + ": " + kind.error().message};
    const bool unix_socket = kind->socket && kind->family == AF_UNIX;
    const bool stream = unix_socket && kind->type == SOCK_STREAM && kind->listening;
    const bool dgram = unix_socket && kind->type == SOCK_DGRAM;
    if (!stream && !dgram)
      return ActivationError{which +
                             " is neither a listening AF_UNIX stream socket (the API) nor an AF_UNIX datagram socket "
                             "(the learning socket)"};
    int& slot = stream ? out.api : out.learn;
    if (slot >= 0)
      return ActivationError{"systemd passed two " + std::string(stream ? "stream" : "datagram") +
                             " sockets; dedupd takes one of each (dedupd.socket)"};
    slot = fd;
  }
  if (out.api < 0)
    return ActivationError{"systemd passed no listening AF_UNIX stream socket for the API (dedupd.socket)"};
  return out;
}

}  // namespace dedupd::daemon::systemd
