// A one-shot timerfd on CLOCK_MONOTONIC, armed with a relative delay. The
// delay is computed from the wall clock by the caller: libfaketime fakes
// the wall clock but not timerfd's absolute CLOCK_REALTIME deadlines, and a
// relative monotonic delay behaves the same under both.
#pragma once

#include <chrono>

namespace dedupd::daemon {

class Timer {
 public:
  Timer();
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  int fd() const { return fd_; }
  void arm(std::chrono::milliseconds delay);  // 0 fires at once
  void disarm();
  // Reads the expiration count so the fd stops being readable.
  void acknowledge();

 private:
  int fd_ = -1;
};

}  // namespace dedupd::daemon
