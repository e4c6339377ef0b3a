#include "daemon/systemd/listen_env.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <limits>
#include <string>

#include "daemon/systemd/env_number.hpp"

namespace dedupd::daemon::systemd {

namespace {

base::Error listen_env_error(std::string message) {
  return base::Error{"systemd.listen_fds", 0, std::move(message), false};
}

}  // namespace

base::Result<int> listen_fd_count(std::optional<std::string_view> listen_pid,
                                  std::optional<std::string_view> listen_fds, pid_t self) {
  if (!listen_pid || !listen_fds) return 0;
  const auto pid = env_number(*listen_pid, std::uint64_t(std::numeric_limits<pid_t>::max()));
  if (!pid) return listen_env_error("LISTEN_PID=\"" + std::string(*listen_pid) + "\" is not a process id");
  if (pid_t(*pid) != self) return 0;
  constexpr std::uint64_t most = INT_MAX - kFirstListenFd;
  const auto count = env_number(*listen_fds, most);
  if (!count)
    return listen_env_error("LISTEN_FDS=\"" + std::string(*listen_fds) + "\" is not a number of descriptors (0 to " +
                            std::to_string(most) + ")");
  return int(*count);
}

base::Result<int> take_listen_fds() {
  auto count = listen_fd_count(env_value("LISTEN_PID"), env_value("LISTEN_FDS"), ::getpid());
  // After the count: the views it read die with the variables.
  ::unsetenv("LISTEN_PID");
  ::unsetenv("LISTEN_FDS");
  ::unsetenv("LISTEN_FDNAMES");
  if (!count) return count;
  for (int fd = kFirstListenFd; fd < kFirstListenFd + *count; ++fd) {
    const int flags = ::fcntl(fd, F_GETFD);
    if (flags < 0 || ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC) != 0)
      return listen_env_error("LISTEN_FDS=" + std::to_string(*count) + " passes descriptor " + std::to_string(fd) +
                              ", which cannot be used: " + std::strerror(errno));
  }
  return count;
}

}  // namespace dedupd::daemon::systemd
