// Which Xet clients are alive under a managed root (daemon/xetcache/
// liveness: judge_clients), from the client logs and the process table as
// the probes show them, remembered from pass to pass. The verdict's rules
// themselves are xetcache::judge_liveness (tests/unit/xetcache/rules_test.cpp);
// here, what the facts are made of.
#include "daemon/xetcache/liveness.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <vector>

#include "tests/unit/daemon/steward_fakes.hpp"

namespace dedupd::daemon::xetcache {
namespace {

using namespace steward_fakes;

// Ticks since boot of a process started at `unix_s`.
std::uint64_t ticks_at(std::int64_t unix_s) { return std::uint64_t(unix_s - kBoot) * kHz; }

class LivenessTest : public ::testing::Test {
 protected:
  void judge() { judge_clients("/cache/xet", clock, processes, files, sightings); }

  // A log of a client started at `started` under `pid`, last written `age` ago.
  void log(std::int64_t started, pid_t pid, std::uint64_t age = 0, std::uint64_t size = 100) {
    files.logs.push_back({log_name(started, 0, pid), clock.wall - age, size});
  }

  FakeClock clock;
  FakeProcesses processes;
  FakeFiles files;
  ClientSightings sightings;
};

TEST_F(LivenessTest, AClientWhoseProcessRunsIsAlive) {
  const std::int64_t started = std::int64_t(kWall) - 3600;
  log(started, 4242);
  processes.running[4242] = ProcessStart{true, ticks_at(started)};
  judge();
  EXPECT_TRUE(sightings.liveness.established) << sightings.liveness.why;
  EXPECT_EQ(sightings.clients, std::vector<std::int64_t>{4242});
  EXPECT_EQ(sightings.liveness.alive_clients, 1u);
  EXPECT_TRUE(sightings.ever_running.contains(log_name(started, 0, 4242)));
  EXPECT_EQ(sightings.sighted.at(log_name(started, 0, 4242)), ticks_at(started));
}

TEST_F(LivenessTest, APidReusedByAnotherProcessIsNotTheClient) {
  const std::int64_t started = std::int64_t(kWall) - 3600;
  log(started, 4242, 5000);
  // The process under that pid started an hour after the client's log.
  processes.running[4242] = ProcessStart{true, ticks_at(started + 3600)};
  judge();
  EXPECT_TRUE(sightings.clients.empty());
  EXPECT_TRUE(sightings.liveness.established) << sightings.liveness.why;
}

TEST_F(LivenessTest, TheSameProcessIsKnownByItsStartTicksFromPassToPass) {
  const std::int64_t started = std::int64_t(kWall) - 3600;
  log(started, 7);
  processes.running[7] = ProcessStart{true, ticks_at(started)};
  judge();
  ASSERT_EQ(sightings.clients.size(), 1u);
  // The wall clock jumps a day: the ticks seen before still say it is the client.
  clock.wall += 86400;
  processes.boot.reset();
  judge();
  EXPECT_EQ(sightings.clients, std::vector<std::int64_t>{7});
  // Other ticks under that pid later: another process.
  processes.running[7] = ProcessStart{true, ticks_at(started) + 500};
  judge();
  EXPECT_TRUE(sightings.clients.empty());
}

TEST_F(LivenessTest, AnEndedClientSeenRunningIsNoMysteryButAGrowingUnknownLogIs) {
  const std::int64_t started = std::int64_t(kWall) - 3600;
  log(started, 10);
  processes.running[10] = ProcessStart{true, ticks_at(started)};
  judge();
  processes.running.erase(10);
  judge();
  EXPECT_TRUE(sightings.liveness.established) << sightings.liveness.why;
  EXPECT_TRUE(sightings.clients.empty());

  // A log of a pid never seen here, written to between two passes: a client
  // this steward cannot see.
  log(started, 11, 5000);
  judge();
  files.growing_logs.insert(log_name(started, 0, 11));
  judge();
  EXPECT_FALSE(sightings.liveness.established);
  EXPECT_FALSE(sightings.liveness.why.empty());
}

TEST_F(LivenessTest, LogsThatCannotBeReadLeaveLivenessUnknown) {
  for (int err : {ENOENT, EACCES, EIO}) {
    files.logs_err = err;
    judge();
    EXPECT_FALSE(sightings.liveness.established) << err;
    EXPECT_FALSE(sightings.liveness.why.empty());
  }
  files.logs_err = 0;
  processes.foreign = true;
  judge();
  EXPECT_FALSE(sightings.liveness.established) << "pids of another namespace cannot be matched";
}

}  // namespace
}  // namespace dedupd::daemon::xetcache
