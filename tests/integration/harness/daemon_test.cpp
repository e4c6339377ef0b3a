#include "harness/daemon_test.hpp"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "harness/eventually.hpp"
#include "tests/support/temp_dir.hpp"

namespace dedupd::itest {

namespace fs = std::filesystem;

void DaemonTest::SetUp() {
  dir = tests::make_temp_dir("it");
  // Reachable by other users: one test talks to the socket as "nobody".
  ::chmod(dir.c_str(), 0755);
  incoming = dir / "incoming";
  fs::create_directories(incoming);
  socket = dir / "dedupd.sock";
  config = dir / "dedupd.yaml";
  log_file = dir / "dedupd.log";
  write_config();
}

void DaemonTest::TearDown() {
  http_.reset();
  daemon.kill_hard();
  if (HasFailure()) std::fprintf(stderr, "---- dedupd log ----\n%s--------------------\n", daemon_log().c_str());
  std::error_code ec;
  fs::remove_all(dir, ec);
}

void DaemonTest::write_config(const std::string& extra, const std::string& watch) {
  std::ofstream f(config);
  f << "state_dir: " << (dir / "state").string() << "\n"
    << "socket: " << socket.string() << "\n"
    << "watch:\n  - " << (watch.empty() ? incoming.string() : watch) << "\n"
    << "log_level: debug\n"
    << extra;
}

void DaemonTest::start_no_wait(std::vector<std::string> wrapper, std::vector<std::string> env,
                               std::vector<std::string> args) {
  LaunchOptions o;
  o.wrapper = std::move(wrapper);
  o.env = std::move(env);
  o.args = args.empty() ? std::vector<std::string>{"--config", config.string()} : std::move(args);
  o.log_file = log_file;
  o.work_dir = dir;
  daemon.start(o);
}

void DaemonTest::start(std::vector<std::string> wrapper, std::vector<std::string> env) {
  start_no_wait(std::move(wrapper), std::move(env));
  ASSERT_TRUE(wait_healthy()) << "dedupd did not become healthy";
}

bool DaemonTest::wait_healthy(std::chrono::seconds timeout) {
  return eventually(
             [&] {
               if (!daemon.running()) return true;  // fail fast below
               return http().get("/healthz").status == 200;
             },
             timeout) &&
         daemon.running();
}

bool DaemonTest::eventually(const std::function<bool()>& pred, std::chrono::seconds timeout) {
  return itest::eventually(pred, timeout, std::chrono::milliseconds(20));
}

HttpClient& DaemonTest::http() {
  if (!http_) http_ = std::make_unique<HttpClient>(socket.string());
  return *http_;
}

nlohmann::json DaemonTest::get_json(const std::string& path, long expect_status) {
  auto r = http().get(path);
  EXPECT_EQ(r.status, expect_status) << path << ": " << r.body;
  return r.json();
}

std::size_t DaemonTest::shard_count(const std::string& state) {
  auto r = http().get("/v1/shards?state=" + state);
  if (r.status != 200) return 0;
  auto j = r.json();
  return j.contains("shards") ? j["shards"].size() : 0;
}

bool DaemonTest::chunk_found(const std::string& raw_hash) { return http().get("/v1/chunk/" + raw_hash).status == 200; }

std::string DaemonTest::daemon_log() const {
  std::ifstream f(log_file);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace dedupd::itest
