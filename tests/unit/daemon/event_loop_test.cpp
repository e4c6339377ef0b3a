#include "daemon/loop/event_loop.hpp"

#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace dedupd::daemon {
namespace {

using namespace std::chrono_literals;

TEST(EventLoop, RunsFdHandlersWhenReadable) {
  EventLoop loop;
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  int calls = 0;
  loop.watch_fd(p[0], [&] {
    char c;
    ASSERT_EQ(::read(p[0], &c, 1), 1);
    ++calls;
  });
  loop.run_once(0ms);
  EXPECT_EQ(calls, 0);
  ASSERT_EQ(::write(p[1], "x", 1), 1);
  loop.run_once(1000ms);
  EXPECT_EQ(calls, 1);
  loop.unwatch_fd(p[0]);
  ASSERT_EQ(::write(p[1], "x", 1), 1);
  loop.run_once(0ms);
  EXPECT_EQ(calls, 1);
  ::close(p[0]);
  ::close(p[1]);
}

TEST(EventLoop, CallRunsOnTheLoopThreadAndReturnsTheResult) {
  EventLoop loop;
  std::atomic<bool> done{false};
  std::thread::id loop_thread = std::this_thread::get_id();
  std::thread::id ran_on;
  std::thread caller([&] {
    int v = loop.call<int>(
        [&] {
          ran_on = std::this_thread::get_id();
          return 42;
        },
        10s);
    EXPECT_EQ(v, 42);
    done = true;
  });
  while (!done) loop.run_once(100ms);
  caller.join();
  EXPECT_EQ(ran_on, loop_thread);
}

TEST(EventLoop, CallPassesExceptionsBack) {
  EventLoop loop;
  std::atomic<bool> done{false};
  std::thread caller([&] {
    EXPECT_THROW(loop.call<int>([]() -> int { throw std::logic_error("boom"); }, 10s), std::logic_error);
    done = true;
  });
  while (!done) loop.run_once(100ms);
  caller.join();
}

TEST(EventLoop, CallTimesOutWhenTheLoopIsBusyAndTheTaskStillRunsLater) {
  EventLoop loop;
  auto ran = std::make_shared<std::atomic<bool>>(false);
  std::thread caller([&] { EXPECT_THROW(loop.call<void>([ran] { *ran = true; }, 10ms), std::runtime_error); });
  caller.join();  // the loop never ran meanwhile
  EXPECT_FALSE(*ran);
  loop.run_once(0ms);
  EXPECT_TRUE(*ran);
}

TEST(EventLoop, WakeEndsAWait) {
  EventLoop loop;
  std::thread waker([&] {
    std::this_thread::sleep_for(10ms);
    loop.wake();
  });
  loop.run_once(std::chrono::milliseconds(60'000));  // returns because of the wake
  waker.join();
  SUCCEED();
}

}  // namespace
}  // namespace dedupd::daemon
