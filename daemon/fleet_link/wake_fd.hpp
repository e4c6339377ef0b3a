// A wake-up another thread can post and a worker can wait on with a
// relative timeout: an eventfd polled, not a condition variable, because
// under libfaketime (the expiry tests) a timed wait on an absolute instant
// can sleep for the whole faked offset. Posting never blocks and never
// allocates, so it is safe from any thread, under any lock.
#pragma once

#include <chrono>

namespace dedupd::daemon::fleet_link {

class WakeFd {
 public:
  WakeFd();  // throws std::runtime_error when no eventfd can be made (start-up only)
  ~WakeFd();
  WakeFd(const WakeFd&) = delete;
  WakeFd& operator=(const WakeFd&) = delete;

  void post();
  // Returns early when posted (consuming the posts); a negative or zero
  // duration only consumes what was posted.
  void wait(std::chrono::steady_clock::duration d);
  // For a poll of one's own: readable while a post is not consumed.
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

}  // namespace dedupd::daemon::fleet_link
