#include "daemon/loop/timer.hpp"

#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <system_error>

namespace dedupd::daemon {

Timer::Timer() {
  fd_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "timerfd_create");
}

Timer::~Timer() {
  if (fd_ >= 0) ::close(fd_);
}

void Timer::arm(std::chrono::milliseconds delay) {
  auto ms = std::max<std::int64_t>(1, delay.count());  // an all-zero it_value would disarm
  itimerspec spec{};
  spec.it_value.tv_sec = time_t(ms / 1000);
  spec.it_value.tv_nsec = long(ms % 1000) * 1'000'000;
  if (::timerfd_settime(fd_, 0, &spec, nullptr) != 0)
    throw std::system_error(errno, std::generic_category(), "timerfd_settime");
}

void Timer::disarm() {
  itimerspec spec{};
  ::timerfd_settime(fd_, 0, &spec, nullptr);
}

void Timer::acknowledge() {
  std::uint64_t n;
  (void)!::read(fd_, &n, sizeof n);
}

}  // namespace dedupd::daemon
