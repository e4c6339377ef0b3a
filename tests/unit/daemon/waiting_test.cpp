// daemon/ingest/waiting: files that failed for a reason that passes wait
// with it, come back with backoff or at once when space returns, and are
// never dropped.
#include "daemon/ingest/waiting.hpp"

#include <gtest/gtest.h>

#include "index/status.hpp"

namespace dedupd::daemon::ingest {
namespace {

using namespace std::chrono_literals;
using Clock = WaitingFiles::Clock;

watch::Candidate file(const std::string& name) { return watch::Candidate{"/w/" + name, watch::FileKind::shard}; }

TEST(Waiting, OnlyReasonsThatPassWait) {
  for (const char* rule : {index::kRuleNoSpace, index::kRuleMapFull, index::kRuleIo, kRuleStillWritten, kRuleReadIo})
    EXPECT_TRUE(is_passing_failure(rule)) << rule;
  for (const char* rule : {index::kRuleCorrupt, index::kRuleSchema, "shard.footer", ""})
    EXPECT_FALSE(is_passing_failure(rule)) << rule;
}

TEST(Waiting, RetriesBackOffAndDoubleUpToTheBound) {
  WaitingFiles w;
  const Clock::time_point t0{};
  w.wait(file("a.mdb"), index::kRuleNoSpace, "full", 1000, t0);
  EXPECT_TRUE(w.due(t0 + 1s).empty());
  auto d = w.due(t0 + WaitingFiles::kFirstRetry);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_TRUE(w.due(t0 + 1h).empty()) << "handed out once until it comes back";
  // It fails again: twice the wait.
  Clock::time_point t = t0 + WaitingFiles::kFirstRetry;
  w.wait(d[0], index::kRuleNoSpace, "full", 1002, t);
  EXPECT_TRUE(w.due(t + WaitingFiles::kFirstRetry).empty());
  EXPECT_EQ(w.due(t + 2 * WaitingFiles::kFirstRetry).size(), 1u);
  // Many failures later the wait stays at the bound.
  for (int i = 0; i < 20; ++i) {
    w.wait(file("a.mdb"), index::kRuleNoSpace, "full", 1002, t);
    (void)w.due(t + 1h);
  }
  w.wait(file("a.mdb"), index::kRuleNoSpace, "full", 1002, t);
  EXPECT_TRUE(w.due(t + WaitingFiles::kMaxRetry - 1s).empty());
  EXPECT_EQ(w.due(t + WaitingFiles::kMaxRetry).size(), 1u);
  w.wait(file("a.mdb"), index::kRuleNoSpace, "full", 1002, t);
  core::WaitingStatus s = w.status(1100);
  ASSERT_EQ(s.count, 1u);
  EXPECT_EQ(s.files[0].since, 1000u) << "the first failure's time stays";
  EXPECT_EQ(s.files[0].age_s, 100u);
  EXPECT_EQ(s.files[0].attempts, 24u);
}

TEST(Waiting, SpaceBackMakesEveryFileDueNow) {
  WaitingFiles w;
  const Clock::time_point t0{};
  w.wait(file("a.mdb"), index::kRuleNoSpace, "full", 1000, t0);
  w.wait(file("b.mdb"), index::kRuleMapFull, "map", 1001, t0);
  EXPECT_TRUE(w.out_of_space());
  EXPECT_TRUE(w.due(t0).empty());
  w.all_due_now(t0);
  EXPECT_EQ(w.due(t0).size(), 2u);
}

TEST(Waiting, SettledFilesLeaveAndTheRestStay) {
  WaitingFiles w;
  const Clock::time_point t0{};
  w.wait(file("a.mdb"), index::kRuleNoSpace, "full", 1000, t0);
  w.wait(file("b.mdb"), kRuleStillWritten, "open", 1001, t0);
  w.settled("/w/a.mdb");
  EXPECT_EQ(w.size(), 1u);
  EXPECT_FALSE(w.out_of_space()) << "only a file still being written is left";
  core::WaitingStatus s = w.status(1005);
  ASSERT_EQ(s.files.size(), 1u);
  EXPECT_EQ(s.files[0].path, "/w/b.mdb");
  EXPECT_EQ(s.files[0].rule, kRuleStillWritten);
}

TEST(Waiting, StatusListsTheOldestFirstAndAtMostAFew) {
  WaitingFiles w;
  const Clock::time_point t0{};
  for (int i = 0; i < 30; ++i) w.wait(file(std::to_string(i) + ".mdb"), index::kRuleNoSpace, "full", 2000 - i, t0);
  core::WaitingStatus s = w.status(3000, 5);
  EXPECT_EQ(s.count, 30u);
  ASSERT_EQ(s.files.size(), 5u);
  EXPECT_EQ(s.files[0].path, "/w/29.mdb");
  EXPECT_EQ(s.files[0].since, 1971u);
}

}  // namespace
}  // namespace dedupd::daemon::ingest
