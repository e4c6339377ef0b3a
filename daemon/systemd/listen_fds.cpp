#include "daemon/systemd/listen_fds.hpp"

#include <sys/socket.h>
#include <systemd/sd-daemon.h>

#include <cstring>

namespace dedupd::daemon::systemd {

std::variant<int, NoActivation, ActivationError> activated_socket() {
  // unset_environment=1: nothing we start later should think it owns them.
  int n = sd_listen_fds(1);
  if (n < 0) return ActivationError{std::string("sd_listen_fds: ") + std::strerror(-n)};
  if (n == 0) return NoActivation{};
  if (n > 1)
    return ActivationError{"systemd passed " + std::to_string(n) +
                           " sockets; dedupd listens on exactly one AF_UNIX stream socket"};
  int fd = SD_LISTEN_FDS_START;
  int r = sd_is_socket_unix(fd, SOCK_STREAM, 1, nullptr, 0);
  if (r < 0) return ActivationError{std::string("checking the passed socket: ") + std::strerror(-r)};
  if (r == 0) return ActivationError{"the socket systemd passed is not a listening AF_UNIX stream socket"};
  return fd;
}

}  // namespace dedupd::daemon::systemd
