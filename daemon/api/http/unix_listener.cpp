#include "daemon/api/http/unix_listener.hpp"

#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

namespace dedupd::daemon::api::http {

namespace {

// Descriptors kept for the rest of the daemon (index, inotify, shard files
// being read, MHD's own) when the connection limit is fitted to RLIMIT_NOFILE.
constexpr rlim_t kReservedFds = 128;

base::Error listen_error(std::string message) { return base::Error{"api.listen", 0, std::move(message)}; }

base::Error errno_error(std::string_view what, const std::string& path) {
  return listen_error(fmt::format("{} {}: {}", what, path, std::strerror(errno)));
}

}  // namespace

base::Result<int> bind_unix(const std::string& path, mode_t mode) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path)
    return listen_error(fmt::format("socket path must be 1..{} bytes: '{}'", sizeof addr.sun_path - 1, path));
  std::memcpy(addr.sun_path, path.data(), path.size());

  struct stat st {};
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      return listen_error(fmt::format("{} exists and is not a socket; not replacing it", path));
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool live = probe >= 0 && connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    if (probe >= 0) close(probe);
    if (live) return listen_error(fmt::format("{} is in use by a running server", path));
    unlink(path.c_str());
  }

  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return errno_error("socket() for", path);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    auto e = errno_error("cannot bind", path);
    close(fd);
    return e;
  }
  // Nobody can connect before listen(), so setting the mode here is race-free.
  if (chmod(path.c_str(), mode) != 0 || listen(fd, SOMAXCONN) != 0) {
    auto e = errno_error("cannot set up", path);
    close(fd);
    unlink(path.c_str());
    return e;
  }
  return fd;
}

std::string bound_path(int fd) {
  sockaddr_un addr{};
  socklen_t len = sizeof addr;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 || addr.sun_family != AF_UNIX) return "";
  std::size_t n = len > offsetof(sockaddr_un, sun_path) ? len - offsetof(sockaddr_un, sun_path) : 0;
  // Abstract sockets start with a NUL; a path ends with one (or fills sun_path).
  if (n == 0 || addr.sun_path[0] == '\0') return "";
  return std::string(addr.sun_path, strnlen(addr.sun_path, std::min(n, sizeof addr.sun_path)));
}

unsigned fit_to_descriptors(unsigned connections) {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return connections;
  rlim_t want = rlim_t(connections) + kReservedFds;
  if (r.rlim_cur != RLIM_INFINITY && r.rlim_cur < want) {
    rlimit up = r;
    up.rlim_cur = r.rlim_max == RLIM_INFINITY ? want : std::min(want, r.rlim_max);
    if (::setrlimit(RLIMIT_NOFILE, &up) == 0) r = up;
  }
  if (r.rlim_cur == RLIM_INFINITY || r.rlim_cur >= want) return connections;
  return unsigned(r.rlim_cur > kReservedFds + 1 ? r.rlim_cur - kReservedFds : 1);
}

}  // namespace dedupd::daemon::api::http
