#include "harness/notify_socket.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>

namespace dedupd::itest {

NotifySocket::NotifySocket(std::filesystem::path path) : path_(std::move(path)) {
  fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path_.native().size() >= sizeof addr.sun_path) throw std::runtime_error("notify path too long");
  std::strcpy(addr.sun_path, path_.c_str());
  if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    throw std::runtime_error("cannot bind the notify socket");
}

NotifySocket::~NotifySocket() {
  if (fd_ >= 0) ::close(fd_);
  ::unlink(path_.c_str());
}

bool NotifySocket::wait_for(const std::string& line, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    for (; matched_ < messages_.size(); ++matched_)
      if (("\n" + messages_[matched_] + "\n").find("\n" + line + "\n") != std::string::npos) {
        ++matched_;
        return true;
      }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, int(left.count())) != 1) continue;
    char buf[4096];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n > 0) messages_.emplace_back(buf, std::size_t(n));
  }
}

}  // namespace dedupd::itest
