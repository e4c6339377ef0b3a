#include "daemon/loop/event_loop.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace dedupd::daemon::loop {

namespace {
[[noreturn]] void throw_errno(const char* what) { throw std::system_error(errno, std::generic_category(), what); }
}  // namespace

EventLoop::EventLoop() {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) throw_errno("epoll_create1");
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) throw_errno("eventfd");
  watch_fd(wake_fd_, [this] {
    std::uint64_t n;
    while (::read(wake_fd_, &n, sizeof n) > 0) {
    }
    drain_tasks();
  });
}

EventLoop::~EventLoop() {
  if (wake_fd_ >= 0) ::close(wake_fd_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

void EventLoop::watch_fd(int fd, Handler on_readable) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) throw_errno("epoll_ctl(ADD)");
  handlers_[fd] = std::move(on_readable);
}

void EventLoop::unwatch_fd(int fd) {
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  handlers_.erase(fd);
}

void EventLoop::run_once(std::chrono::milliseconds timeout) {
  epoll_event events[16];
  int n = ::epoll_wait(epoll_fd_, events, 16, int(std::max<std::int64_t>(0, timeout.count())));
  if (n < 0) {
    if (errno == EINTR) return;
    throw_errno("epoll_wait");
  }
  for (int i = 0; i < n; ++i) {
    auto it = handlers_.find(events[i].data.fd);
    if (it == handlers_.end()) continue;  // unwatched by an earlier handler
    Handler h = it->second;               // a handler may unwatch itself
    h();
  }
}

void EventLoop::post(std::function<void()> task) {
  {
    std::lock_guard lock(tasks_mutex_);
    tasks_.push_back(std::move(task));
  }
  wake();
}

void EventLoop::wake() {
  std::uint64_t one = 1;
  // Only fails when the counter would overflow, i.e. a wake is pending anyway.
  (void)!::write(wake_fd_, &one, sizeof one);
}

void EventLoop::drain_tasks() {
  std::vector<std::function<void()>> batch;
  {
    std::lock_guard lock(tasks_mutex_);
    batch.swap(tasks_);
  }
  for (auto& t : batch) t();
}

}  // namespace dedupd::daemon::loop
