// Resource faults: the disk fills up under the index (faultfs, a FUSE file
// system whose size the test sets: harness/fault_fs.hpp says why FUSE) or
// the daemon hits its file-size limit (RLIMIT_FSIZE, any user).
// Either way: the failed ingest is an error in the log, dedupd keeps
// serving what it had, nothing half-written shows, status shows the files
// waiting and the full disk, and once space returns they are indexed by
// themselves: no operator step and no safety scan (check_interval is an
// hour here), only the waiting list's retries.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>

#include "harness/cannot_run.hpp"
#include "harness/daemon_test.hpp"
#include "harness/fault_fs.hpp"
#include "harness/program_run.hpp"
#include "support.hpp"

namespace dedupd::reliability {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

class FaultTest : public itest::DaemonTest {
 protected:
  void TearDown() override {
    daemon.kill_hard();
    disk_.reset();
    DaemonTest::TearDown();
  }

  // A config with a safety scan that never comes within a test (so what
  // takes the skipped files in is the waiting list) and a quiet log (it
  // lives outside the full filesystem, but under the file-size limit too).
  void write_quiet_config(const char* log_level = "warn") {
    std::ofstream f(config);
    f << "state_dir: " << (dir / "state").string() << "\n"
      << "socket: " << socket.string() << "\n"
      << "watch:\n  - " << incoming.string() << "\n"
      << "log_level: " << log_level << "\n"
      << "expiry:\n  check_interval: 1h\n";
  }

  std::vector<KnownShard> make_shards(int n, std::uint64_t seed0) {
    std::vector<KnownShard> out;
    for (int i = 0; i < n; ++i) {
      auto s = itest::make_shard({.seed = seed0 + std::uint64_t(i), .xorbs = 2, .chunks_per_xorb = 4096});
      out.push_back(known(s));
      made_.push_back(std::move(s));
    }
    return out;
  }
  void drop(std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) itest::drop_file(incoming, made_[i].file_name(), made_[i].bytes);
  }
  bool log_has(const std::string& text) { return daemon_log().find(text) != std::string::npos; }

  // Every shard in `shards` answers all of its chunks through the socket.
  void expect_all_queryable(const std::vector<KnownShard>& shards) {
    for (const auto& s : shards) {
      std::string body = "{\"hashes\":[";
      for (std::size_t i = 0; i < s.chunks.size(); ++i) body += (i ? ",\"" : "\"") + s.chunks[i].to_string() + "\"";
      body += "]}";
      auto r = http().post("/v1/chunk", body);
      ASSERT_EQ(r.status, 200);
      EXPECT_EQ(r.json()["found"].get<std::size_t>(), s.chunks.size()) << s.hash.to_string();
    }
  }

  // Fills the index until an ingest fails, checks the daemon's state while
  // it is stuck, lets `restore` give space back, and checks the recovery.
  void fill_fail_recover(const std::function<void()>& restore, const char* what) {
    auto shards = make_shards(24, 9000);
    drop(0, 2);
    ASSERT_TRUE(eventually([&] { return shard_count("live") == 2; }, 60s)) << daemon_log();
    on_filled_start_();
    drop(2, shards.size());
    ASSERT_TRUE(eventually([&] { return log_has("cannot index") || !daemon.running(); }, 90s))
        << "no ingest failed: the limit is too generous\n"
        << daemon_log();
    ASSERT_TRUE(daemon.running()) << "dedupd died when " << what << "\n" << daemon_log();
    std::size_t live_while_full = shard_count("live");
    EXPECT_LT(live_while_full, shards.size());
    EXPECT_GE(live_while_full, 2u);
    // Whatever was indexed before stays queryable while writes fail.
    expect_all_queryable({shards[0], shards[1]});
    // Status says what waits, and why.
    nlohmann::json st;
    EXPECT_TRUE(eventually(
        [&] {
          st = get_json("/v1/status");
          return st["waiting"]["count"].get<std::size_t>() + shard_count("live") == shards.size();
        },
        30s))
        << "every shard not indexed waits: " << st.dump();
    EXPECT_TRUE(st["state_dir_space"]["disk_full"].get<bool>()) << st.dump();
    const std::string rule = st["waiting"]["files"][0]["rule"].get<std::string>();
    EXPECT_TRUE(rule == "index.no_space" || rule == "index.io" || rule == "index.map_full") << rule;
    const std::string metrics = http().get("/metrics").body;
    EXPECT_NE(metrics.find("dedupd_disk_full 1"), std::string::npos) << metrics;
    EXPECT_NE(metrics.find("dedupd_ingest_waiting_files " + std::to_string(st["waiting"]["count"].get<std::size_t>())),
              std::string::npos);
    check_space_(st, true);
    auto health = http().get("/healthz");
    std::printf("  %s: %zu of %zu shards indexed; /healthz %ld; the log says: %s\n", what, live_while_full,
                shards.size(), health.status, first_line_with("cannot index").c_str());

    restore();
    ASSERT_TRUE(eventually([&] { return shard_count("live") == shards.size(); }, 90s))
        << shard_count("live") << " live after space returned\n"
        << daemon_log();
    st = get_json("/v1/status");
    EXPECT_EQ(st["waiting"]["count"].get<std::size_t>(), 0u) << st.dump();
    EXPECT_FALSE(st["state_dir_space"]["disk_full"].get<bool>()) << st.dump();
    check_space_(st, false);
    expect_all_queryable(shards);
    EXPECT_EQ(daemon.stop(), 0);
    IndexReport rep = inspect_index(dir / "state" / "index", shards);
    for (const auto& p : rep.problems) ADD_FAILURE() << p;
    EXPECT_EQ(rep.live, shards.size());
    std::printf("  after space returned: all %zu shards indexed, %llu chunk entries, invariants hold\n", rep.live,
                (unsigned long long)rep.chunk_entries);
  }

  std::string first_line_with(const std::string& text) {
    std::string log = daemon_log();
    auto at = log.find(text);
    if (at == std::string::npos) return "(nothing)";
    auto begin = log.rfind('\n', at);
    auto end = log.find('\n', at);
    return log.substr(begin == std::string::npos ? 0 : begin + 1, end - (begin == std::string::npos ? 0 : begin + 1));
  }

  std::vector<itest::MadeShard> made_;
  std::unique_ptr<itest::FaultFs> disk_;
  std::function<void()> on_filled_start_ = [] {};
  // What status says of the space, while the disk is full and after.
  std::function<void(const nlohmann::json& status, bool full)> check_space_ = [](const nlohmann::json&, bool) {};
};

// The index's file system: 3 MiB, grown to 256 MiB once the disk is full.
TEST_F(FaultTest, FullDiskUnderTheIndex) {
  disk_ = std::make_unique<itest::FaultFs>(dir / "state-files", dir / "state", dir, 3u << 20);
  if (!disk_->mounted()) DEDUPD_CANNOT_RUN(disk_->failure());
  write_quiet_config("info");  // the log is not on the full file system
  start();
  // What /v1/status and `dedupctl status` say of the space is what the file
  // system says: full, then the room that came back.
  std::uint64_t size = 3u << 20;
  check_space_ = [&](const nlohmann::json& st, bool full) {
    const nlohmann::json& space = st["state_dir_space"];
    EXPECT_EQ(space["size_bytes"].get<std::uint64_t>(), size) << st.dump();
    EXPECT_EQ(space["free_bytes"].get<std::uint64_t>(), size - disk_->used()) << st.dump();
    itest::ProgramRun r = itest::run_program(DEDUPCTL_BINARY, {"--socket", socket.string(), "status"});
    EXPECT_EQ(r.out.find("DISK FULL, index writes fail") != std::string::npos, full) << r.out;
    EXPECT_NE(r.out.find(full ? " of 3.0 MiB" : " of 256.0 MiB"), std::string::npos) << r.out;
  };
  fill_fail_recover([&] { disk_->set_size(size = 256u << 20); }, "the filesystem under the index filled up");
  // The space coming back was seen, and every waiting file tried again at
  // once: not only each file's own backoff.
  EXPECT_TRUE(log_has("waiting file(s) again")) << daemon_log();
}

TEST_F(FaultTest, FileSizeLimitOnTheDaemon) {
  write_quiet_config();
  start();
  on_filled_start_ = [&] {
    // No room beyond what the file holds: a write past its end fails (and
    // raises SIGXFSZ). The soft limit alone, so it can be
    // raised again without privileges.
    std::uint64_t size = fs::file_size(dir / "state" / "index" / "data.mdb");
    rlimit lim{};
    ASSERT_EQ(::prlimit(daemon.pid(), RLIMIT_FSIZE, nullptr, &lim), 0);
    lim.rlim_cur = size;
    ASSERT_EQ(::prlimit(daemon.pid(), RLIMIT_FSIZE, &lim, nullptr), 0) << std::strerror(errno);
  };
  fill_fail_recover(
      [&] {
        rlimit lim{};
        ASSERT_EQ(::prlimit(daemon.pid(), RLIMIT_FSIZE, nullptr, &lim), 0);
        lim.rlim_cur = lim.rlim_max;
        ASSERT_EQ(::prlimit(daemon.pid(), RLIMIT_FSIZE, &lim, nullptr), 0);
      },
      "its file-size limit (RLIMIT_FSIZE) was reached");
}

}  // namespace
}  // namespace dedupd::reliability
