// The daemon's single work thread: epoll over a few fds (inotify, timer,
// signals) plus a queue other threads post tasks to. Everything that writes
// the index runs here, so the index has exactly one writer.
#pragma once

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/result.hpp"
#include "daemon/core/errors.hpp"

namespace dedupd::daemon::loop {

class EventLoop {
 public:
  using Handler = std::function<void()>;

  EventLoop();
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Calls `on_readable` on the loop thread whenever fd is readable.
  void watch_fd(int fd, Handler on_readable);
  void unwatch_fd(int fd);

  // Waits up to `timeout` (0: just poll) and runs whatever became ready:
  // fd handlers and posted tasks. Loop thread only.
  void run_once(std::chrono::milliseconds timeout);

  // Any thread: run `task` on the loop thread soon.
  void post(std::function<void()> task);

  // Any thread but the loop's: run `fn` on the loop and wait for its result.
  // A "daemon.busy" error when the loop did not get to it within `timeout`
  // (the task still runs later; it must own its data), "daemon.internal"
  // when fn threw (the exception stops here, on the loop thread).
  template <class T>
  base::Result<T> call(std::function<base::Result<T>()> fn, std::chrono::milliseconds timeout);

  // Any thread: make the next run_once return without waiting.
  void wake();

 private:
  void drain_tasks();

  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: "tasks are queued"
  std::unordered_map<int, Handler> handlers_;
  std::mutex tasks_mutex_;
  std::vector<std::function<void()>> tasks_;
};

template <class T>
base::Result<T> EventLoop::call(std::function<base::Result<T>()> fn, std::chrono::milliseconds timeout) {
  auto promise = std::make_shared<std::promise<base::Result<T>>>();
  auto future = promise->get_future();
  post([promise, fn = std::move(fn)]() {
    try {
      promise->set_value(fn());
    } catch (const std::exception& e) {
      promise->set_value(core::seam_error(core::kRuleInternal, std::string("on the work loop: ") + e.what()));
    } catch (...) {
      promise->set_value(core::seam_error(core::kRuleInternal, "on the work loop: an exception of unknown type"));
    }
  });
  if (future.wait_for(timeout) != std::future_status::ready)
    return core::seam_error(core::kRuleBusy, "the daemon's work loop did not get to it within " +
                                                 std::to_string(timeout.count()) + " ms; try again");
  return future.get();
}

}  // namespace dedupd::daemon::loop
