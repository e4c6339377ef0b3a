#include "daemon/loop/event_loop.hpp"

#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace dedupd::daemon::loop {
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
    auto v = loop.call<int>(
        [&]() -> base::Result<int> {
          ran_on = std::this_thread::get_id();
          return 42;
        },
        10s);
    ASSERT_TRUE(v.ok()) << v.error().to_string();
    EXPECT_EQ(*v, 42);
    done = true;
  });
  while (!done) loop.run_once(100ms);
  caller.join();
  EXPECT_EQ(ran_on, loop_thread);
}

TEST(EventLoop, CallPassesErrorsBackAndStopsExceptionsOnTheLoop) {
  EventLoop loop;
  std::atomic<bool> done{false};
  std::thread caller([&] {
    auto failed = loop.call<int>([]() -> base::Result<int> { return base::Error{"index.lmdb", 0, "x", false}; }, 10s);
    ASSERT_FALSE(failed.ok());
    EXPECT_EQ(failed.error().rule, "index.lmdb");
    auto threw = loop.call<int>([]() -> base::Result<int> { throw std::logic_error("boom"); }, 10s);
    ASSERT_FALSE(threw.ok());
    EXPECT_EQ(threw.error().rule, core::kRuleInternal);
    EXPECT_NE(threw.error().message.find("boom"), std::string::npos);
    done = true;
  });
  while (!done) loop.run_once(100ms);
  caller.join();
}

TEST(EventLoop, CallTimesOutWhenTheLoopIsBusyAndTheTaskStillRunsLater) {
  EventLoop loop;
  auto ran = std::make_shared<std::atomic<bool>>(false);
  std::thread caller([&] {
    auto r = loop.call<int>(
        [ran]() -> base::Result<int> {
          *ran = true;
          return 1;
        },
        10ms);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().rule, core::kRuleBusy);
  });
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
}  // namespace dedupd::daemon::loop
