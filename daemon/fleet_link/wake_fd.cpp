#include "daemon/fleet_link/wake_fd.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace dedupd::daemon::fleet_link {

WakeFd::WakeFd() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (fd_ < 0) throw std::runtime_error(std::string("fleet: eventfd: ") + std::strerror(errno));
}

WakeFd::~WakeFd() { ::close(fd_); }

void WakeFd::post() {
  std::uint64_t one = 1;
  // EAGAIN: the counter is full, so a wake-up is pending anyway.
  (void)!::write(fd_, &one, sizeof one);
}

void WakeFd::wait(std::chrono::steady_clock::duration d) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, int(std::clamp<long long>(ms, 0, 1 << 30))) > 0) {
    std::uint64_t n;
    (void)!::read(fd_, &n, sizeof n);
  }
}

}  // namespace dedupd::daemon::fleet_link
