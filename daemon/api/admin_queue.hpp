// One thread that runs admin handlers. Admin actions block until the
// daemon's work loop has done them (a rescan can take seconds); running them
// here, with the HTTP connection suspended, keeps the HTTP threads free for
// reads. One thread is enough: the work loop serialises them anyway.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace dedupd::daemon::http {

class AdminQueue {
 public:
  AdminQueue() : thread_([this] { run(); }) {}
  ~AdminQueue() { stop(); }
  AdminQueue(const AdminQueue&) = delete;
  AdminQueue& operator=(const AdminQueue&) = delete;

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
    cv_.notify_one();
    if (thread_.joinable()) thread_.join();
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
  std::thread thread_;  // last: starts after the members it uses
};

}  // namespace dedupd::daemon::http
