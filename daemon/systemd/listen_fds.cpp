#include "daemon/systemd/listen_fds.hpp"

#include <sys/socket.h>
#include <systemd/sd-daemon.h>

#include <cstring>

namespace dedupd::daemon::systemd {

std::variant<ActivatedSockets, NoActivation, ActivationError> activated_sockets() {
  // unset_environment=1: nothing we start later should think it owns them.
  int n = sd_listen_fds(1);
  if (n < 0) return ActivationError{std::string("sd_listen_fds: ") + std::strerror(-n)};
  if (n == 0) return NoActivation{};
  ActivatedSockets out;
  for (int fd = SD_LISTEN_FDS_START; fd < SD_LISTEN_FDS_START + n; ++fd) {
    const std::string which = "the socket systemd passed as fd " + std::to_string(fd);
    int stream = sd_is_socket_unix(fd, SOCK_STREAM, 1, nullptr, 0);
    int dgram = stream > 0 ? 0 : sd_is_socket_unix(fd, SOCK_DGRAM, -1, nullptr, 0);
    if (stream < 0 || dgram < 0)
      return ActivationError{"checking " + which + ": " + std::strerror(-(stream < 0 ? stream : dgram))};
    int& slot = stream > 0 ? out.api : out.learn;
    if (stream == 0 && dgram == 0)
      return ActivationError{which +
                             " is neither a listening AF_UNIX stream socket (the API) nor an AF_UNIX datagram socket "
                             "(the learning socket)"};
    if (slot >= 0)
      return ActivationError{"systemd passed two " + std::string(stream > 0 ? "stream" : "datagram") +
                             " sockets; dedupd takes one of each (dedupd.socket)"};
    slot = fd;
  }
  if (out.api < 0)
    return ActivationError{"systemd passed no listening AF_UNIX stream socket for the API (dedupd.socket)"};
  return out;
}

}  // namespace dedupd::daemon::systemd
