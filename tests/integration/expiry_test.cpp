// Expiry with the real fixture under faketime, and the timer while running.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>

#include "harness/cannot_run.hpp"
#include "harness/daemon_test.hpp"
#include "harness/make_shard.hpp"

namespace dedupd::itest {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

using Expiry = DaemonTest;

// From tests/fixtures/gpt2-64-8bits.tflite.shard (+ .json): keyed, created
// 1754059905, expires 1754664705 (2025-08-08 14:51:45 UTC).
constexpr const char* kRawChunk = "9502eec19d4b0c9f7b389228fa801f68ecdf15d69ccd1da2f9ddbd0219898335";
constexpr const char* kXorb1 = "213031765f0b4d7bc826ccd5bdda3261f624187e2997a2de61111652d31b081c";
// What `faketime '2025-08-02 12:00:00' dedupd ...` does, minus the wrapper
// process (it would get the signals the test means for dedupd): preload
// libfaketime with a start time that then advances with the real clock.
std::vector<std::string> at_august_2() {
  return {"LD_PRELOAD=" + libfaketime(), "FAKETIME=@2025-08-02 12:00:00", "FAKETIME_NO_CACHE=1", "TZ=UTC"};
}

std::vector<std::uint8_t> fixture_bytes() {
  std::ifstream f(fixtures_dir() / "gpt2-64-8bits.tflite.shard", std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

TEST_F(Expiry, FixtureAnswersBeforeItsExpiryAndIsPurgedAfter) {
  if (libfaketime().empty()) GTEST_SKIP() << "libfaketime is not installed";
  start({}, at_august_2());
  auto path = drop_file(incoming, "fixture.mdb", fixture_bytes());
  ASSERT_TRUE(eventually([&] { return chunk_found(kRawChunk); })) << "not indexed at 2025-08-02";

  auto found = get_json(std::string("/v1/chunk/") + kRawChunk);
  ASSERT_EQ(found["locations"].size(), 1u) << found.dump();
  EXPECT_EQ(found["locations"][0]["xorb"], kXorb1);
  EXPECT_EQ(found["locations"][0]["chunk_index"], 0);
  EXPECT_EQ(found["locations"][0]["shards"][0]["keyed"], true);
  EXPECT_EQ(found["locations"][0]["shards"][0]["expiry"], 1754664705);
  EXPECT_EQ(daemon.stop(), 0);

  // Today the shard is long expired: at start its entries leave the index
  // and, with no grace, its file goes too.
  write_config("expiry:\n  delete_after: 0s\n");
  start();
  EXPECT_TRUE(eventually([&] { return !fs::exists(path); })) << "the expired file was kept";
  auto gone = http().get(std::string("/v1/chunk/") + kRawChunk);
  EXPECT_EQ(gone.status, 404);
  // Not found, and why: the one shard that held it expired.
  auto why = gone.json();
  ASSERT_EQ(why["expired_shards"].size(), 1u) << gone.body;
  EXPECT_EQ(why["expired_shards"][0]["expiry"], 1754664705);
  EXPECT_EQ(why["expired_shards"][0]["keyed"], true);
  EXPECT_EQ(http().get(std::string("/v1/chunk/") + std::string(64, '7')).json()["expired_shards"].size(), 0u);
  EXPECT_EQ(shard_count("expired"), 1u);
  EXPECT_EQ(shard_count("live"), 0u);
}

TEST_F(Expiry, AShardExpiredWhenFoundIsNotIndexedAndKeptWithGraceNever) {
  write_config("expiry:\n  delete_after: never\n");
  start();
  auto path = drop_file(incoming, "fixture.mdb", fixture_bytes());
  ASSERT_TRUE(eventually([&] { return shard_count("expired") == 1; }));
  auto gone = http().get(std::string("/v1/chunk/") + kRawChunk);
  EXPECT_EQ(gone.status, 404);
  EXPECT_EQ(gone.json()["expired_shards"].size(), 1u) << gone.body;
  auto purge = http().post("/v1/admin/purge", "");
  ASSERT_EQ(purge.status, 200) << purge.body;
  EXPECT_TRUE(purge.json()["deleted_files"].empty());
  EXPECT_TRUE(fs::exists(path));
}

// The daemon's wall clock, standing still wherever the test puts it: a
// file libfaketime reads at every call (FAKETIME_TIMESTAMP_FILE, no cache).
// Monotonic time stays real (DONT_FAKE_MONOTONIC): the work loop's wait for
// the next expiry is a relative epoll timeout computed from the wall clock
// (daemon/jobs/expiry), which passes on however long the machine takes. So do files' times
// (NO_FAKE_STAT): libfaketime would shift them by where the clock stands,
// and a file read at one time and stat'ed for deletion at another would
// look changed.
class StandingClock {
 public:
  explicit StandingClock(fs::path file) : file_(std::move(file)) {}
  void stand_at(std::uint64_t unix_s) {
    std::time_t t = std::time_t(unix_s);
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &tm);  // no '@': it stands
    const fs::path next = file_.string() + ".new";
    std::ofstream(next) << text << "\n";
    fs::rename(next, file_);  // libfaketime never reads half a line
  }
  std::vector<std::string> env() const {
    return {"LD_PRELOAD=" + libfaketime(),
            "FAKETIME_TIMESTAMP_FILE=" + file_.string(),
            "FAKETIME_NO_CACHE=1",
            "DONT_FAKE_MONOTONIC=1",
            "NO_FAKE_STAT=1",
            "TZ=UTC"};
  }

 private:
  fs::path file_;
};

// Not paced by this machine's speed: the daemon's clock stands before the
// shard's expiry until the shard is indexed and seen to answer, however
// long that takes, and only then is moved to the expiry. The expiry job (due
// at the expiry, looked at again while the clock stands) takes it out
// with no request, no restart and no safety scan (an hour away).
TEST_F(Expiry, TheTimerTakesAShardOutAtItsExpiryWhileRunning) {
  if (libfaketime().empty()) DEDUPD_CANNOT_RUN("libfaketime is not installed");
  const std::uint64_t t0 = std::uint64_t(std::time(nullptr));
  const std::uint64_t expiry = t0 + 2;
  StandingClock clock(dir / "clock");
  clock.stand_at(t0);
  write_config("expiry:\n  delete_after: 0s\n  check_interval: 1h\n");
  start({}, clock.env());
  auto forever = make_shard({.seed = 40});
  auto shard = make_shard({.seed = 41, .expiry = expiry, .created = expiry - 100});
  drop_file(incoming, forever.file_name(), forever.bytes);
  auto path = drop_file(incoming, shard.file_name(), shard.bytes);
  const std::string chunk = shard.first_chunks[0].to_string();
  ASSERT_TRUE(eventually([&] { return chunk_found(chunk) && chunk_found(forever.first_chunks[0].to_string()); }, 120s))
      << daemon_log();
  EXPECT_EQ(shard_count("expired"), 0u) << "taken out before its expiry";

  clock.stand_at(expiry);
  EXPECT_TRUE(eventually([&] { return !chunk_found(chunk); }, 60s)) << daemon_log();
  auto gone = http().get("/v1/chunk/" + chunk);
  EXPECT_EQ(gone.status, 404);
  ASSERT_EQ(gone.json()["expired_shards"].size(), 1u) << gone.body;
  EXPECT_EQ(gone.json()["expired_shards"][0]["expiry"], expiry);
  EXPECT_TRUE(eventually([&] { return !fs::exists(path); }));
  EXPECT_EQ(shard_count("expired"), 1u);
  EXPECT_TRUE(chunk_found(forever.first_chunks[0].to_string())) << "the shard that does not expire went too";
}

TEST_F(Expiry, SizeCapEvictsTheOldestExpiringShards) {
  start();
  std::uint64_t far = std::uint64_t(std::time(nullptr)) + 30 * 86400;
  auto older = make_shard({.seed = 51, .expiry = far, .created = 1000});
  auto newer = make_shard({.seed = 52, .expiry = far, .created = 2000});
  auto forever = make_shard({.seed = 53});
  auto older_path = drop_file(incoming, older.file_name(), older.bytes);
  auto newer_path = drop_file(incoming, newer.file_name(), newer.bytes);
  auto forever_path = drop_file(incoming, forever.file_name(), forever.bytes);
  ASSERT_TRUE(eventually([&] { return shard_count("live") == 3; }));

  // Room for one expiring shard: the older one goes, file and entries.
  write_config("expiry:\n  max_bytes: " + std::to_string(newer.bytes.size() + 10) + "\n");
  daemon.signal(SIGHUP);
  EXPECT_TRUE(eventually([&] { return !fs::exists(older_path); }));
  EXPECT_TRUE(fs::exists(newer_path));
  EXPECT_TRUE(fs::exists(forever_path));
  EXPECT_FALSE(chunk_found(older.first_chunks[0].to_string()));
  EXPECT_TRUE(chunk_found(newer.first_chunks[0].to_string()));
}

}  // namespace
}  // namespace dedupd::itest
