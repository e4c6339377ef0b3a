#include "daemon/systemd/notify_send.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace dedupd::daemon::systemd {

base::Result<std::monostate> send_notification(const NotifyAddress& to, std::string_view state) {
  auto failed = [&](const char* call, int error) {
    return base::Error{"systemd.notify", 0,
                       "notifying systemd on " + to.shown + ": " + call + ": " + std::strerror(error), false};
  };
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return failed("socket", errno);
  ssize_t sent = 0;
  do {
    sent = ::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&to.address),
                    to.length);
  } while (sent < 0 && errno == EINTR);
  const int error = errno;
  ::close(fd);
  if (sent < 0) return failed("sendto", error);
  // A datagram goes whole or not at all; a short count would be a kernel's oddity.
  if (std::size_t(sent) != state.size()) return failed("sendto", EMSGSIZE);
  return std::monostate{};
}

}  // namespace dedupd::daemon::systemd
