// Threads that run handlers off the HTTP threads, their connections
// suspended meanwhile. Each libmicrohttpd pool thread serves every
// connection it accepted, so a handler that blocks holds up all of those,
// not only its own. Two kinds of handler may block: admin actions, which
// wait for the daemon's work loop (a rescan can take seconds; one thread,
// as the work loop serialises them anyway), and reads that may wait: on the
// fleet's database for up to their bound (a stopped server: the whole
// fleet.lookup_timeout; one thread per connection the fleet pool may lend,
// and two more, which then find none idle and answer at once), or on work
// of their own (a dry run of the Xet cache steward).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace dedupd::daemon::api::http {

class JobQueue {
 public:
  explicit JobQueue(std::size_t threads) {
    for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
  }
  ~JobQueue() { stop(); }
  JobQueue(const JobQueue&) = delete;
  JobQueue& operator=(const JobQueue&) = delete;

  void post(std::function<void()> job) {
    {
      std::lock_guard lock(mu_);
      jobs_.push_back(std::move(job));
    }
    cv_.notify_one();
  }

  // Runs what is already queued (each job resumes its connection), then
  // joins. The server must not be stopped while connections are suspended.
  void stop() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }

 private:
  void run() {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping and drained
      auto job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      job();
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;  // last: start after the members they use
};

}  // namespace dedupd::daemon::api::http
