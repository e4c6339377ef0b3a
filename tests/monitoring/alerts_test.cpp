// Each alert of packaging/prometheus/dedupd-alerts.yml that a single dedupd
// raises about itself, raised by a real dedupd in the state the alert names
// and read by a real Prometheus through the metrics listener (prometheus.hpp:
// the shipped rules, each `for:` cut to seconds). A healthy host raises none.
// The fleet's alerts are raised in prometheus_test.cpp.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "harness/cannot_run.hpp"
#include "harness/daemon_test.hpp"
#include "harness/fault_fs.hpp"
#include "harness/make_shard.hpp"
#include "prometheus.hpp"

namespace dedupd::itest {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

class Alerts : public DaemonTest {
 protected:
  void TearDown() override {
    daemon.kill_hard();
    disk_.reset();
    prometheus_.reset();
    DaemonTest::TearDown();
  }

  // dedupd's config with its metrics listener on a free loopback port, the
  // one Prometheus scrapes.
  void write_config_with_metrics(const std::string& extra = "") {
    target_ = "127.0.0.1:" + std::to_string(free_port());
    write_config("metrics:\n  listen: " + target_ + "\n" + extra);
  }

  // A Prometheus scraping this host, its rules checked to be the shipped
  // ones; returns once it has seen the host up.
  Prometheus& watch() {
    prometheus_ = std::make_unique<Prometheus>(dir / "prometheus", std::vector<std::string>{target_});
    prometheus_->wait_ready();
    const std::string up = "up{job=\"dedupd\",instance=\"" + target_ + "\"} == 1";
    if (!eventually([&] { return prometheus_->query(up).size() == 1; }, 30s))
      throw std::runtime_error("Prometheus does not scrape " + target_ + ":\n" + prometheus_->log());
    return *prometheus_;
  }

  // The alerts pending or firing for this host.
  std::set<std::string> raised() {
    std::set<std::string> out;
    for (const auto& a : prometheus_->alerts())
      if (a["labels"]["instance"] == target_) out.insert(a["labels"]["alertname"].get<std::string>());
    return out;
  }
  bool fires(const std::string& alert) { return prometheus_->fires(alert, target_); }
  bool resolves(const std::string& alert) { return prometheus_->resolves(alert, target_); }
  std::string alerts_text() { return prometheus_->alerts().dump(1); }

  // A healthy host: not one alert, not even a pending one, once the rules
  // have seen it.
  void expect_no_alert() {
    prometheus_->wait_evaluated();
    EXPECT_EQ(raised(), std::set<std::string>{}) << alerts_text();
  }

  std::vector<MadeShard> drop_shards(int n, std::uint64_t seed) {
    std::vector<MadeShard> out;
    for (int i = 0; i < n; ++i) {
      out.push_back(make_shard({.seed = seed + std::uint64_t(i), .xorbs = 2, .chunks_per_xorb = 4096}));
      drop_file(incoming, out.back().file_name(), out.back().bytes);
    }
    return out;
  }

  std::string target_;
  std::unique_ptr<FaultFs> disk_;
  std::unique_ptr<Prometheus> prometheus_;
};

// The index's file system (faultfs) shrunk to leave 5% free: nearly full;
// then shards that do not fit: the disk is full, they wait, and the
// clients that push shards through the API get 503s; then room again.
TEST_F(Alerts, NearlyFullThenFullWithWaitingFilesAndFailedRequestsThenRoomAgain) {
  disk_ = std::make_unique<FaultFs>(dir / "state-files", dir / "state", dir, 256u << 20);
  if (!disk_->mounted()) DEDUPD_CANNOT_RUN(disk_->failure());
  write_config_with_metrics();
  start();
  drop_shards(2, 9100);
  ASSERT_TRUE(eventually([&] { return shard_count("live") == 2; }, 60s)) << daemon_log();
  watch();
  expect_no_alert();

  // 5% of the file system left: nothing fails yet, nothing waits.
  const std::uint64_t used = disk_->used();
  disk_->set_size((used * 100 / 95 + 4095) / 4096 * 4096);
  ASSERT_TRUE(fires("DedupdIndexDiskNearlyFull")) << alerts_text();
  prometheus_->wait_evaluated();
  EXPECT_EQ(raised(), std::set<std::string>{"DedupdIndexDiskNearlyFull"}) << alerts_text();

  // Shards that do not fit.
  const auto more = drop_shards(8, 9200);
  ASSERT_TRUE(eventually([&] { return get_json("/v1/status")["state_dir_space"]["disk_full"] == true; }, 60s))
      << daemon_log();
  ASSERT_TRUE(fires("DedupdDiskFull")) << alerts_text();
  ASSERT_TRUE(fires("DedupdIngestWaiting")) << alerts_text();
  // Pushed through the API, a shard that does not fit is a 503 (the disk,
  // not the daemon); a few of those among the requests so far are over 5%.
  int failed = 0;
  std::uint64_t seed = 9300;
  bool over = eventually(
      [&] {
        for (int i = 0; i < 10; ++i) {
          MadeShard s = make_shard({.seed = seed++, .xorbs = 2, .chunks_per_xorb = 4096});
          const long status = http().post("/v1/admin/ingest", std::string(s.bytes.begin(), s.bytes.end())).status;
          EXPECT_TRUE(status == 503 || status == 500) << status;
          ++failed;
        }
        return prometheus_->alert_state("DedupdApiErrors", target_) == "firing";
      },
      60s);
  EXPECT_TRUE(over) << failed << " requests failed\n" << alerts_text();
  std::printf("  disk full: %d pushes answered 503 raised DedupdApiErrors\n", failed);

  // Room again: the waiting shards go in by themselves, and the alerts of
  // the disk resolve (DedupdApiErrors looks back 5 minutes: it stays).
  disk_->set_size(1u << 30);
  ASSERT_TRUE(eventually([&] { return shard_count("live") == 2 + more.size(); }, 90s)) << daemon_log();
  for (const char* alert : {"DedupdDiskFull", "DedupdIngestWaiting", "DedupdIndexDiskNearlyFull"})
    EXPECT_TRUE(resolves(alert)) << alert << "\n" << alerts_text();
}

// A truncated upload in a watched directory: rejected, never indexed.
TEST_F(Alerts, AFileThatIsNotAShardIsAnIngestError) {
  write_config_with_metrics();
  start();
  watch();
  expect_no_alert();
  MadeShard s = make_shard({.seed = 9400, .xorbs = 2, .chunks_per_xorb = 64});
  drop_file(incoming, s.file_name(), std::vector<std::uint8_t>(s.bytes.begin(), s.bytes.begin() + s.bytes.size() / 2));
  ASSERT_TRUE(eventually([&] { return shard_count("rejected") == 1; })) << daemon_log();
  EXPECT_TRUE(fires("DedupdIngestErrors")) << alerts_text();
}

// The process start time as this host's /metrics says it.
std::string start_time_of(HttpClient& client) {
  std::smatch m;
  const std::string page = client.get("/metrics").body;
  if (!std::regex_search(page, m, std::regex("\nprocess_start_time_seconds ([0-9.e+]+)\n"))) return "";
  return m[1].str();
}

// Three restarts, each seen by Prometheus: restarting; then stopped: down.
TEST_F(Alerts, RestartingThenDown) {
  write_config_with_metrics();
  start();
  watch();
  expect_no_alert();
  const std::string scraped_start = "process_start_time_seconds{instance=\"" + target_ + "\"}";
  for (int restart = 1; restart <= 3; ++restart) {
    daemon.kill_hard();
    start();
    const std::string started = start_time_of(http());
    ASSERT_FALSE(started.empty());
    ASSERT_TRUE(eventually(
        [&] {
          json r = prometheus_->query(scraped_start + " == " + started);
          return r.size() == 1;
        },
        30s))
        << "restart " << restart << " not scraped: " << prometheus_->query(scraped_start).dump();
  }
  EXPECT_TRUE(fires("DedupdRestarting")) << alerts_text();

  EXPECT_EQ(daemon.stop(), 0);
  EXPECT_TRUE(fires("DedupdDown")) << alerts_text();
}

// A damaged index found at start is moved aside and rebuilt from the
// watched shards, and the rebuild ends once every file is in; one is still
// being written (an upload in progress holds it open for writing), so until
// it is closed the index is damaged and being rebuilt.
TEST_F(Alerts, DamagedWhileRebuilt) {
  write_config_with_metrics();
  start();
  const auto shards = drop_shards(3, 9500);
  ASSERT_TRUE(eventually([&] { return shard_count("live") == 3; }, 60s)) << daemon_log();
  ASSERT_EQ(daemon.stop(), 0);
  // Its meta pages kept, every page after them gone.
  fs::resize_file(dir / "state" / "index" / "data.mdb", 2 * 4096 + 100);
  const int writer = ::open((incoming / shards[0].file_name()).c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(writer, 0);
  start();
  watch();
  EXPECT_TRUE(fires("DedupdIndexDamaged")) << alerts_text();
  EXPECT_EQ(get_json("/v1/status")["index_health"]["state"], "rebuilding");
  ::close(writer);
  EXPECT_TRUE(eventually([&] { return get_json("/v1/status")["index_health"]["state"] == "rebuilt"; }, 60s))
      << daemon_log();
  EXPECT_TRUE(resolves("DedupdIndexDamaged")) << alerts_text();
  EXPECT_EQ(shard_count("live"), 3u);
}

// The local Xet endpoint's nginx passes every global-dedup query on to
// dedupd marked X-Dedupd-Via: xet-endpoint (sent here as nginx sends them),
// and the index holds none of the chunks asked for: all go upstream.
TEST_F(Alerts, TheEndpointForwardsEveryQuery) {
  write_config_with_metrics();
  start();
  drop_shards(1, 9600);
  ASSERT_TRUE(eventually([&] { return shard_count("live") == 1; }, 60s)) << daemon_log();
  watch();
  expect_no_alert();
  for (int i = 0; i < 25; ++i) {
    MadeShard elsewhere = make_shard({.seed = 9700 + std::uint64_t(i), .xorbs = 1, .chunks_per_xorb = 1});
    auto r = http().get("/v1/chunks/default-merkledb/" + elsewhere.first_chunks[0].to_string(),
                        {"X-Dedupd-Via: xet-endpoint"});
    EXPECT_EQ(r.status, 404) << r.body;
  }
  EXPECT_TRUE(fires("DedupdEndpointForwardsEverything")) << alerts_text();
}

// The host's clock an hour slow (libfaketime): to it a shard whose expiry
// passed 15 minutes ago has 45 minutes to go, so the shard stays in the
// index and its expiry is behind.
TEST_F(Alerts, ExpiryBehind) {
  if (libfaketime().empty()) DEDUPD_CANNOT_RUN("libfaketime is not installed");
  write_config_with_metrics();
  start({}, {"LD_PRELOAD=" + libfaketime(), "FAKETIME=-1h", "TZ=UTC"});
  watch();
  expect_no_alert();
  const std::uint64_t now = std::uint64_t(std::time(nullptr));
  MadeShard s =
      make_shard({.seed = 9800, .xorbs = 1, .chunks_per_xorb = 3, .expiry = now - 900, .created = now - 4000});
  drop_file(incoming, s.file_name(), s.bytes);
  ASSERT_TRUE(eventually([&] { return chunk_found(s.first_chunks[0].to_string()); }, 60s)) << daemon_log();
  EXPECT_TRUE(fires("DedupdExpiryBehind")) << alerts_text();
}

// The descriptors dedupd has open, counted in /proc.
std::size_t open_fds(pid_t pid) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) ++n;
  return n;
}

// A connection to dedupd's socket that sends nothing: one descriptor
// held in dedupd until its header timeout.
class IdleClient {
 public:
  explicit IdleClient(const fs::path& socket) : fd_(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", socket.c_str());
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
      throw std::runtime_error("cannot connect to " + socket.string());
  }
  ~IdleClient() { ::close(fd_); }
  IdleClient(const IdleClient&) = delete;
  IdleClient& operator=(const IdleClient&) = delete;

 private:
  int fd_;
};

// Its soft limit on descriptors lowered (prlimit, as a low LimitNOFILE=
// would set it) to over 90% in use, with room left for what a scrape opens
// (the metrics listener's own connection to the socket, the socket's end of
// it, the directory read that counts them): without that room the count
// fails, the series vanishes and nothing fires. So dedupd first holds
// about a hundred idle clients, and the limit is what it holds at rest
// plus eight. A limit set at 92% of one count flaked in CI: a count taken
// while a scrape was in flight raised the limit past 90% at rest.
TEST_F(Alerts, DescriptorsNearTheLimit) {
  write_config_with_metrics("limits:\n  header_timeout: 600s\n");
  start();
  watch();
  expect_no_alert();
  const std::size_t before = open_fds(daemon.pid());
  std::vector<std::unique_ptr<IdleClient>> idle;
  for (int i = 0; i < 100; ++i) idle.push_back(std::make_unique<IdleClient>(socket));
  ASSERT_TRUE(eventually([&] { return open_fds(daemon.pid()) >= before + 100; }, 30s))
      << open_fds(daemon.pid()) << " open, " << before << " before the idle clients";
  // At rest: the least of a second's counts; a scrape in flight only adds.
  std::size_t open = open_fds(daemon.pid());
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(50ms);
    open = std::min(open, open_fds(daemon.pid()));
  }
  rlimit lim{};
  ASSERT_EQ(::prlimit(daemon.pid(), RLIMIT_NOFILE, nullptr, &lim), 0);
  lim.rlim_cur = open + 8;
  ASSERT_GT(double(open) / double(lim.rlim_cur), 0.9) << open << " open at rest";
  ASSERT_EQ(::prlimit(daemon.pid(), RLIMIT_NOFILE, &lim, nullptr), 0);
  EXPECT_TRUE(fires("DedupdFileDescriptorsNearLimit")) << open << " open at rest, limit " << lim.rlim_cur << "\n"
                                                       << alerts_text() << "\n"
                                                       << daemon_log();
}

}  // namespace
}  // namespace dedupd::itest
