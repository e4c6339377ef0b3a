// The daemon's single work thread: epoll over a few fds (inotify, timer,
// signals) plus a queue other threads post tasks to. Everything that writes
// the index runs here, so the index has exactly one writer.
#pragma once

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <vector>

namespace dedupd::daemon {

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
  // Throws what fn threw, or std::runtime_error when the loop did not get to
  // it within `timeout` (the task still runs later; it must own its data).
  template <class T>
  T call(std::function<T()> fn, std::chrono::milliseconds timeout);

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
T EventLoop::call(std::function<T()> fn, std::chrono::milliseconds timeout) {
  auto promise = std::make_shared<std::promise<T>>();
  auto future = promise->get_future();
  post([promise, fn = std::move(fn)]() {
    try {
      if constexpr (std::is_void_v<T>) {
        fn();
        promise->set_value();
      } else {
        promise->set_value(fn());
      }
    } catch (...) {
      promise->set_exception(std::current_exception());
    }
  });
  if (future.wait_for(timeout) != std::future_status::ready)
    throw std::runtime_error("the daemon's work loop is busy; try again");
  return future.get();
}

}  // namespace dedupd::daemon
