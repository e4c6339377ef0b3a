// systemd's end of a datagram protocol, for tests of dedupd's: the
// notification socket NOTIFY_SOCKET names, journald's socket. An AF_UNIX
// datagram socket bound to a path or, written '@name', to an abstract name;
// it hands over each datagram whole.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <optional>
#include <string>

namespace dedupd::daemon::testing {

class DatagramReceiver {
 public:
  explicit DatagramReceiver(const std::string& where) : fd_(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    if (where.empty() || where.size() >= sizeof a.sun_path) return;
    std::memcpy(a.sun_path, where.data(), where.size());
    if (where[0] == '@') a.sun_path[0] = '\0';
    const auto length = socklen_t(offsetof(sockaddr_un, sun_path) + where.size());
    bound_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&a), length) == 0;
  }
  ~DatagramReceiver() { ::close(fd_); }
  DatagramReceiver(const DatagramReceiver&) = delete;
  DatagramReceiver& operator=(const DatagramReceiver&) = delete;

  bool bound() const { return bound_; }
  // The next datagram, nullopt when none waits: one sent is queued by the
  // time the sender's sendto returns, so no test waits for it.
  std::optional<std::string> next() {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 0) != 1) return std::nullopt;
    std::string buf(65536, '\0');
    const ssize_t n = ::recv(fd_, buf.data(), buf.size(), 0);
    if (n < 0) return std::nullopt;
    buf.resize(std::size_t(n));
    return buf;
  }

 private:
  int fd_;
  bool bound_ = false;
};

}  // namespace dedupd::daemon::testing
