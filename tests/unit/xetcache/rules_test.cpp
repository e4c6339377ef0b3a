// The steward's rules (xetcache/rules.hpp): pure, so every case is a value.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>

#include "tests/support/temp_dir.hpp"
#include "xetcache/rules.hpp"
#include "xetcache/shards.hpp"

namespace dedupd::xetcache {
namespace {

std::int64_t utc(int y, int mo, int d, int h, int mi, int s) {
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  return std::int64_t(::timegm(&tm));
}

// Issue 30, finding 1: fd0e0e3 read the local time as UTC and dropped the
// offset, so a client at -0500 seemed to start 5 h after it did and its pid
// looked reused.
TEST(ClientLogName, TheOffsetIsHonoured) {
  auto west = parse_client_log_name("xet_20261124T044239620-0500_8006.log");
  ASSERT_TRUE(west);
  EXPECT_EQ(west->pid, 8006);
  EXPECT_EQ(west->started_unix, utc(2026, 11, 24, 9, 42, 39));
  EXPECT_EQ(west->uncertainty_seconds, 0u);
  auto east = parse_client_log_name("xet_20261124T044239620+0530_7.log");
  ASSERT_TRUE(east);
  EXPECT_EQ(east->started_unix, utc(2026, 11, 23, 23, 12, 39));
  auto utc_log = parse_client_log_name("xet_20000229T235959000+0000_1.log");
  ASSERT_TRUE(utc_log);
  EXPECT_EQ(utc_log->started_unix, utc(2000, 2, 29, 23, 59, 59));
}

TEST(ClientLogName, WithoutAnOffsetTheTimeIsUncertainByAnyZone) {
  auto log = parse_client_log_name("xet_20261124T044239_42.log");
  ASSERT_TRUE(log);
  EXPECT_EQ(log->started_unix, utc(2026, 11, 24, 4, 42, 39));
  EXPECT_EQ(log->uncertainty_seconds, 14u * 3600);
}

TEST(ClientLogName, OtherNamesAreNotClientLogs) {
  for (const char* name :
       {"notes.log", "xet_20261124T044239620+0000_.log", "xet_20261124T044239620+0000_0.log",
        "xet_20261124T044239620+0000_12x.log", "xet_20261324T044239620+0000_1.log", "xet_20261124X044239620+0000_1.log",
        "xet_20261124T044239620+00_1.log", "xet_20261124T044239620*0000_1.log", "xet_20261124T044239620+0000_1.txt"})
    EXPECT_FALSE(parse_client_log_name(name)) << name;
}

// Judged in ticks since boot: the client's start and the log name agree
// (the name is written a moment after the start); a pid reused later does not.
TEST(LoggedClient, StartTicksAgainstTheLogTime) {
  const BootClock boot{utc(2026, 11, 24, 0, 0, 0), 100};
  auto log = parse_client_log_name("xet_20261123T224239620-0500_8006.log");  // 03:42:39 UTC
  ASSERT_TRUE(log);
  const std::uint64_t started = (3 * 3600 + 42 * 60 + 38) * 100;  // a second before its log
  EXPECT_TRUE(may_be_logged_client(*log, started, boot));
  EXPECT_TRUE(may_be_logged_client(*log, started + 500, boot));          // within the slack
  EXPECT_FALSE(may_be_logged_client(*log, started + 3600 * 100, boot));  // an hour later: reused
  // A log from before this boot: no process running now wrote it.
  auto old = parse_client_log_name("xet_20261120T000000000+0000_8006.log");
  EXPECT_FALSE(may_be_logged_client(*old, 100, boot));
  // No ticks-per-second known: cannot prove reuse, so it counts.
  EXPECT_TRUE(may_be_logged_client(*log, started + 3600 * 100, BootClock{boot.boot_unix, 0}));
}

TEST(Liveness, EstablishedOnlyWhenEverythingIsSeen) {
  LivenessFacts seen;
  seen.client_logs = 3;
  seen.alive_clients = 1;
  auto v = judge_liveness(seen);
  EXPECT_TRUE(v.established);
  EXPECT_EQ(v.alive_clients, 1u);

  // Issue 30, finding 2: fd0e0e3 decided "no clients" in each of these.
  using Logs = LivenessFacts::Logs;
  auto unknown = [&](LivenessFacts f, const char* why) {
    auto verdict = judge_liveness(f);
    EXPECT_FALSE(verdict.established) << why;
    EXPECT_NE(verdict.why.find(why), std::string::npos) << verdict.why;
  };
  LivenessFacts f = seen;
  f.logs = Logs::missing;
  unknown(f, "no logs/ directory");
  f = seen;
  f.logs = Logs::denied;
  f.logs_error = "Permission denied";
  unknown(f, "Permission denied");
  f = seen;
  f.network_fs = "nfs";
  unknown(f, "network file system (nfs)");
  f = seen;
  f.foreign_pid_namespace = true;
  unknown(f, "pid namespace");
  f = seen;
  f.log_dest_redirected = true;
  unknown(f, "HF_XET_LOG_DEST");
  f = seen;
  f.client_logs = 0;
  f.alive_clients = 0;
  unknown(f, "no client log");
  f = seen;
  f.recent_unmatched_logs = 2;
  unknown(f, "not running here");
}

TEST(MayDelete, EveryRuleMustHold) {
  LivenessVerdict none{true, 0, ""};
  LivenessVerdict one{true, 1, ""};
  LivenessVerdict unknown{false, 0, "no logs/ directory"};
  DeletionFacts ok;
  ok.indexed_unchanged = true;
  ok.is_merge_original = true;
  ok.merged_verifies = true;
  ok.now_mono = 100;
  ok.wanted_since_mono = 90;
  ok.grace_seconds = 3600;
  EXPECT_TRUE(may_delete(ok, none).allowed);
  EXPECT_FALSE(may_delete(ok, one).allowed);
  EXPECT_FALSE(may_delete(ok, unknown).allowed);
  DeletionFacts f = ok;
  f.indexed_unchanged = false;
  EXPECT_FALSE(may_delete(f, none).allowed);
  f = ok;
  f.merged_verifies = false;
  EXPECT_FALSE(may_delete(f, none).allowed);
  f = ok;
  f.removed_by_admin = true;
  EXPECT_FALSE(may_delete(f, none).allowed);
  // The bounded exception: the grace, on the monotonic clock, lets a file
  // go under a live client or unknown liveness, never past the other rules.
  f = ok;
  f.now_mono = 90 + 3600;
  EXPECT_TRUE(may_delete(f, one).allowed);
  EXPECT_TRUE(may_delete(f, unknown).allowed);
  f.merged_verifies = false;
  EXPECT_FALSE(may_delete(f, one).allowed);
  // A monotonic clock behind the start (it cannot be, but a journal from a
  // previous boot could say so) waits rather than wraps.
  f = ok;
  f.now_mono = 10;
  EXPECT_FALSE(may_delete(f, one).allowed);
}

TEST(Backoff, DoublesUpToTheMaximum) {
  EXPECT_EQ(backoff_seconds(0, 60, 86400), 0u);
  EXPECT_EQ(backoff_seconds(1, 60, 86400), 60u);
  EXPECT_EQ(backoff_seconds(2, 60, 86400), 120u);
  EXPECT_EQ(backoff_seconds(5, 60, 86400), 960u);
  EXPECT_EQ(backoff_seconds(20, 60, 86400), 86400u);
  EXPECT_EQ(backoff_seconds(4000000000U, 60, 86400), 86400u);
}

}  // namespace
}  // namespace dedupd::xetcache
