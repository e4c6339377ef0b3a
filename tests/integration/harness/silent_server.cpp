#include "harness/silent_server.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace dedupd::itest {

SilentServer::SilentServer(const std::filesystem::path& dir, int port)
    : path_(dir / (".s.PGSQL." + std::to_string(port))) {
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path_.c_str(), sizeof(addr.sun_path) - 1);
  if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd_, 128) != 0) {
    error_ = "cannot listen on " + path_.string() + ": " + std::strerror(errno);
    return;
  }
  thread_ = std::thread([this] {
    for (;;) {
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) {
        if (errno == EINTR) continue;
        return;  // shut down
      }
      std::lock_guard lock(mu_);
      held_.push_back(c);
    }
  });
}

SilentServer::~SilentServer() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);  // ends the accept
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) ::close(fd_);
  for (int c : held_) ::close(c);
  std::error_code ec;
  std::filesystem::remove(path_, ec);
}

std::size_t SilentServer::accepted() {
  std::lock_guard lock(mu_);
  return held_.size();
}

}  // namespace dedupd::itest
