// daemon/supervisor/scheduler: how long the work loop sleeps, and which
// jobs' steps run after a wait, in which order. The jobs here are the
// interface's own kind, told when they are due.
#include "daemon/supervisor/scheduler.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dedupd::daemon::supervisor {
namespace {

using namespace std::chrono_literals;
using jobs::Apply;

// A job due when `due` says, recording its steps and configurations in `log`.
class ToldJob final : public jobs::Job {
 public:
  ToldJob(std::string name, std::vector<std::string>& log) : name_(std::move(name)), log_(log) {}

  std::optional<std::chrono::milliseconds> due;
  std::function<void()> on_run;

  const char* name() const override { return name_.c_str(); }
  std::optional<std::chrono::milliseconds> due_in() override { return due; }
  void run() override {
    log_.push_back(name_);
    due.reset();
    if (on_run) on_run();
  }
  void configure(const config::Config&, Apply when) override {
    log_.push_back(name_ + (when == Apply::at_start ? " at start" : " on reload"));
  }

 private:
  std::string name_;
  std::vector<std::string>& log_;
};

class SchedulerTest : public ::testing::Test {
 protected:
  std::vector<std::string> log;
  ToldJob a{"a", log}, b{"b", log}, c{"c", log};
  Scheduler scheduler{1000ms};

  void SetUp() override {
    scheduler.add(a);
    scheduler.add(b);
    scheduler.add(c);
  }
};

TEST_F(SchedulerTest, TheLoopSleepsUntilTheEarliestJobIsDue) {
  a.due = 500ms;
  b.due = 200ms;
  EXPECT_EQ(scheduler.sleep(), 200ms) << "c is due at no time";
  c.due = 0ms;
  EXPECT_EQ(scheduler.sleep(), 0ms);
}

TEST_F(SchedulerTest, TheLoopSleepsNoLongerThanItsLongestSleep) {
  EXPECT_EQ(scheduler.sleep(), 1000ms) << "no job is due at any time";
  a.due = 1h;
  EXPECT_EQ(scheduler.sleep(), 1000ms);
}

TEST_F(SchedulerTest, OnlyTheJobsDueNowRunTheirStep) {
  a.due = 0ms;
  b.due = 1ms;
  c.due = 0ms;
  EXPECT_EQ(scheduler.run_due(), 2u);
  EXPECT_EQ(log, (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(scheduler.run_due(), 0u) << "a step is not run again until its job is due again";
}

TEST_F(SchedulerTest, AStepSeesWhatTheStepsBeforeItDidInTheSameRound) {
  // As ingest emptying its queue lets the scrub run in the same turn.
  a.due = 0ms;
  a.on_run = [&] { c.due = 0ms; };
  EXPECT_EQ(scheduler.run_due(), 2u);
  EXPECT_EQ(log, (std::vector<std::string>{"a", "c"}));
  // What a later step makes due waits for the next round.
  c.due = 0ms;
  c.on_run = [&] { a.due = 0ms; };
  log.clear();
  EXPECT_EQ(scheduler.run_due(), 1u);
  EXPECT_EQ(log, (std::vector<std::string>{"c"}));
  EXPECT_EQ(scheduler.sleep(), 0ms);
}

TEST_F(SchedulerTest, EveryJobTakesItsPartOfAConfigurationInOrder) {
  scheduler.configure(config::Config{}, Apply::at_start);
  scheduler.configure(config::Config{}, Apply::on_reload);
  EXPECT_EQ(log, (std::vector<std::string>{"a at start", "b at start", "c at start", "a on reload", "b on reload",
                                           "c on reload"}));
}

TEST(JobUntil, IsNeverLessThanZeroAndRoundsUp) {
  const auto t = std::chrono::steady_clock::time_point{} + 1h;
  EXPECT_EQ(jobs::until(t, t), 0ms);
  EXPECT_EQ(jobs::until(t - 1s, t), 0ms);
  EXPECT_EQ(jobs::until(t + 1500us, t), 2ms) << "a wait that ends early would wake the loop for nothing";
}

}  // namespace
}  // namespace dedupd::daemon::supervisor
