// Start, readiness, socket activation, reload and stop of the real binary.
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include <fstream>
#include <iterator>
#include <utility>

#include "harness/daemon_test.hpp"
#include "harness/make_shard.hpp"
#include "harness/notify_socket.hpp"
#include "tests/support/text_file.hpp"

namespace dedupd::itest {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

using Lifecycle = DaemonTest;

TEST_F(Lifecycle, ReadyAndStatusGoToTheNotifySocketAndSigtermStopsCleanly) {
  NotifySocket notify(dir / "notify");
  start_no_wait({}, {notify.env()});
  ASSERT_TRUE(notify.wait_for("READY=1", 30s));
  bool has_status = false;
  for (const auto& m : notify.messages()) has_status |= m.find("STATUS=") != std::string::npos;
  EXPECT_TRUE(has_status);
  // READY means the socket already listens and the index is open.
  EXPECT_EQ(http().get("/healthz").status, 200);

  daemon.signal(SIGTERM);
  EXPECT_TRUE(notify.wait_for("STOPPING=1", 30s));
  EXPECT_EQ(daemon.wait_exit(30s), std::optional<int>(0));
}

TEST_F(Lifecycle, TheWorkLoopPingsTheWatchdog) {
  NotifySocket notify(dir / "notify");
  start_no_wait({}, {notify.env(), "WATCHDOG_USEC=200000"});
  ASSERT_TRUE(notify.wait_for("READY=1", 30s));
  EXPECT_TRUE(notify.wait_for("WATCHDOG=1", 30s));
  EXPECT_TRUE(notify.wait_for("WATCHDOG=1", 30s));  // and keeps doing so
}

// A start reads only what serving needs back from disk: libpq and libcurl,
// and the dozens of libraries they bring, are opened at the first fleet
// connection and the endpoint's first download (fleet/libpq_on_demand.cpp,
// daemon/api/http/curl_on_demand.cpp), never by a daemon answering queries;
// libsystemd and the libraries only it brings (libgcrypt...) not at all:
// dedupd speaks systemd's protocols itself (daemon/systemd/, daemon/log/).
// (libcap may be mapped all the same: NSS's libnss_systemd links it.)
TEST_F(Lifecycle, ADaemonAnsweringQueriesMapsNoLibpqLibcurlOrLibsystemd) {
  start();
  auto shard = make_shard({.seed = 12});
  drop_file(incoming, shard.file_name(), shard.bytes);
  ASSERT_TRUE(eventually([&] { return chunk_found(shard.first_chunks[0].to_string()); }));
  const std::string maps = tests::file_text("/proc/" + std::to_string(daemon.pid()) + "/maps");
  ASSERT_NE(maps.find("/liblmdb.so"), std::string::npos) << "not dedupd's maps:\n" << maps;
  EXPECT_EQ(maps.find("/libpq.so"), std::string::npos);
  EXPECT_EQ(maps.find("/libcurl"), std::string::npos);
  EXPECT_EQ(maps.find("/libnghttp2"), std::string::npos);
  EXPECT_EQ(maps.find("/libsystemd.so"), std::string::npos);
  EXPECT_EQ(maps.find("/libgcrypt.so"), std::string::npos);
}

TEST_F(Lifecycle, TheBoundSocketIsGroupReadableOnly) {
  start();
  struct stat st {};
  ASSERT_EQ(::stat(socket.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0660u);
}

TEST_F(Lifecycle, SocketActivation) {
  // systemd-socket-activate binds the path and starts dedupd on the first
  // connection with LISTEN_FDS=1, like a .socket unit.
  start_no_wait({"systemd-socket-activate", "-l", socket.string()});
  ASSERT_TRUE(wait_healthy());
  auto status = get_json("/v1/status");
  EXPECT_EQ(status["socket"], socket.string());
  EXPECT_NE(daemon_log().find("socket systemd passed"), std::string::npos);
  EXPECT_EQ(daemon.stop(), 0);
}

// dedupd.socket's two sockets, as systemd passes them (LISTEN_FDS=2): the
// API's stream socket and the learning socket. A launcher stands in for
// systemd: it keeps its own copies, starts dedupd on them, and once dedupd
// has stopped says whether the API socket still listens (a client's
// connection waits in its backlog for the next dedupd): MHD's stop shut it
// down, and dedupd.socket failed with POLLHUP, until the server quiesced it.
constexpr const char* kTwoSocketLauncher = R"(
import os, signal, socket, sys
api, learn, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.bind(api); s.listen(16)
d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); d.bind(learn)
pid = os.fork()
if pid == 0:
    a, b = os.dup(s.fileno()), os.dup(d.fileno())  # above 4: placed without clobbering
    os.dup2(a, 3); os.dup2(b, 4)  # dup2's copies are inherited; Python's own sockets are not
    os.environ.update(LISTEN_FDS="2", LISTEN_PID=str(os.getpid()))
    os.execv(argv[0], argv)
signal.signal(signal.SIGTERM, lambda *_: os.kill(pid, signal.SIGTERM))
_, status = os.waitpid(pid, 0)
c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    c.connect(api); print("launcher: the API socket still listens", flush=True)
except OSError as e:
    print("launcher: the API socket is dead: %s" % e, flush=True)
sys.exit(os.waitstatus_to_exitcode(status))
)";

TEST_F(Lifecycle, SocketActivationWithTheLearningSocketLeavesBothListening) {
  const fs::path learn = dir / "passed-learn.sock";
  // No endpoint configured: learning is on because systemd passed its socket.
  write_config("xet_endpoint:\n");
  start_no_wait({"python3", "-c", kTwoSocketLauncher, socket.string(), learn.string()});
  ASSERT_TRUE(wait_healthy());
  EXPECT_NE(daemon_log().find("listening on the sockets systemd passed"), std::string::npos) << daemon_log();
  EXPECT_NE(daemon_log().find("on " + learn.string() + " (passed by systemd)"), std::string::npos) << daemon_log();
  auto learning = [&] { return get_json("/v1/status")["xet_endpoint"]["learning"]; };
  // Shown once dedupd knows of an endpoint: here by the report below.
  int out = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(out, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, learn.c_str());
  const std::string report = "<190>dedupd_learn: 0123456789abcdef0123456789abcdef 200";
  ASSERT_EQ(::sendto(out, report.data(), report.size(), 0, reinterpret_cast<sockaddr*>(&addr), sizeof addr),
            ssize_t(report.size()));
  ::close(out);
  // This process is dedupd's own user: believed, and for no body it holds.
  EXPECT_TRUE(eventually([&] {
    auto s = get_json("/v1/status");
    return s.contains("xet_endpoint") && s["xet_endpoint"]["learning"]["unmatched"] == 1;
  })) << get_json("/v1/status").dump();
  EXPECT_EQ(learning()["listening"], true);

  daemon.signal(SIGTERM);
  EXPECT_EQ(daemon.wait_exit(30s), std::optional<int>(0));
  EXPECT_NE(daemon_log().find("launcher: the API socket still listens"), std::string::npos) << daemon_log();
  // Neither socket file is dedupd's to remove.
  EXPECT_TRUE(fs::is_socket(learn));
  EXPECT_TRUE(fs::is_socket(socket));
}

// POST /v1/admin/reload (the unit's ExecReload): what a restart would
// apply is said, a broken file is refused with its line and changes
// nothing.
TEST_F(Lifecycle, ReloadThroughTheSocketSaysWhatWaitsAndRefusesABrokenFile) {
  fs::create_directories(dir / "second");
  start();
  write_config("limits:\n  max_connections: 100\n", (dir / "second").string());
  auto r = http().post("/v1/admin/reload", "");
  ASSERT_EQ(r.status, 200) << r.body;
  auto doc = nlohmann::json::parse(r.body);
  EXPECT_EQ(doc["config"], config.string());
  EXPECT_EQ(doc["not_applied"], nlohmann::json::array({"limits.max_connections (stays 2048)"}));
  EXPECT_EQ(get_json("/v1/status")["watch"][0], (dir / "second").string());

  std::ofstream(config) << "watch: [\n";
  r = http().post("/v1/admin/reload", "");
  EXPECT_EQ(r.status, 422) << r.body;
  EXPECT_NE(r.body.find("bad_config"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("dedupd.yaml:"), std::string::npos) << r.body;
  EXPECT_EQ(get_json("/v1/status")["watch"][0], (dir / "second").string());
}

// The index opened with its filter bound: a reload says a new one waits
// for a restart. The scrub's interval applies at once, and the status says
// whether the scrub is on.
TEST_F(Lifecycle, ReloadKeepsTheFilterBoundAndAppliesTheScrubInterval) {
  start();
  auto scrub_enabled = [&] { return get_json("/v1/status")["index_health"]["scrub_enabled"]; };
  ASSERT_TRUE(eventually([&] { return scrub_enabled() == true; })) << get_json("/v1/status").dump();
  auto reload = [&] {
    auto r = http().post("/v1/admin/reload", "");
    EXPECT_EQ(r.status, 200) << r.body;
    return nlohmann::json::parse(r.body)["not_applied"];
  };
  write_config("index:\n  filter_memory: 1G\n  scrub_interval: never\n");
  EXPECT_EQ(reload(), nlohmann::json::array({"index.filter_memory (stays 512M)"}));
  EXPECT_EQ(scrub_enabled(), false);
  EXPECT_TRUE(eventually([&] {
    return daemon_log().find("not applied until a restart: index.filter_memory (stays 512M)") != std::string::npos;
  })) << daemon_log();
  write_config("index:\n  scrub_interval: 1h\n");
  EXPECT_EQ(reload(), nlohmann::json::array());
  EXPECT_EQ(scrub_enabled(), true);
}

TEST_F(Lifecycle, CheckConfigSaysOkOrNamesKeyAndLine) {
  start_no_wait({}, {}, {"--check-config", "--config", config.string()});
  EXPECT_EQ(daemon.wait_exit(30s), std::optional<int>(0));
  EXPECT_NE(daemon_log().find("ok"), std::string::npos);

  write_config("expiry:\n  delete_after: 7 days\n");
  fs::remove(log_file);
  start_no_wait({}, {}, {"--check-config", "--config", config.string()});
  EXPECT_EQ(daemon.wait_exit(30s), std::optional<int>(1));
  // state_dir, socket, watch (2 lines), log_level, expiry: -> line 7
  EXPECT_NE(daemon_log().find("dedupd.yaml:7: expiry.delete_after: bad duration"), std::string::npos) << daemon_log();
}

// dedupd --check: the index a running daemon wrote passes, next to the daemon
// and after it stopped; a directory without an index is "could not read"
// (exit 3), not a new empty index.
TEST_F(Lifecycle, CheckVerifiesAnIndexOffline) {
  start();
  auto one = make_shard({.seed = 1}), two = make_shard({.seed = 2});
  drop_file(incoming, one.file_name(), one.bytes);
  drop_file(incoming, two.file_name(), two.bytes);
  ASSERT_TRUE(eventually([&] { return shard_count("live") == 2; }));
  const fs::path index_dir = dir / "state" / "index";
  auto check = [&](const fs::path& target, const std::string& log_name) {
    DaemonProcess checker;
    LaunchOptions o;
    o.args = {"--check", target.string()};
    o.log_file = dir / log_name;
    checker.start(o);
    auto code = checker.wait_exit(60s);
    std::ifstream in(o.log_file);
    return std::make_pair(code, std::string(std::istreambuf_iterator<char>(in), {}));
  };
  auto [live_code, live_out] = check(index_dir, "check-live.log");
  EXPECT_EQ(live_code, std::optional<int>(0)) << live_out;
  EXPECT_NE(live_out.find("ok"), std::string::npos) << live_out;

  EXPECT_EQ(daemon.stop(), 0);
  auto [stopped_code, stopped_out] = check(index_dir, "check-stopped.log");
  EXPECT_EQ(stopped_code, std::optional<int>(0)) << stopped_out;

  fs::create_directories(dir / "empty");
  auto [empty_code, empty_out] = check(dir / "empty", "check-empty.log");
  EXPECT_EQ(empty_code, std::optional<int>(3)) << empty_out;
  EXPECT_NE(empty_out.find("no index here"), std::string::npos) << empty_out;
  EXPECT_FALSE(fs::exists(dir / "empty" / "data.mdb"));
}

// --check reads an index of the previous release without upgrading it: the
// man page promises it only reads.
TEST_F(Lifecycle, CheckReportsAnOlderSchemaAndWritesNothing) {
  const fs::path index_dir = dir / "v1";
  fs::create_directories(index_dir);
  fs::copy_file(fixtures_dir() / "index-v1" / "data.mdb", index_dir / "data.mdb");
  auto bytes_of = [](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string before = bytes_of(index_dir / "data.mdb");
  DaemonProcess checker;
  LaunchOptions o;
  o.args = {"--check", index_dir.string()};
  o.log_file = dir / "check-v1.log";
  checker.start(o);
  EXPECT_EQ(checker.wait_exit(60s), std::optional<int>(0));
  const std::string out = bytes_of(o.log_file);
  EXPECT_NE(out.find("schema 1, will be upgraded to 7 when dedupd opens it"), std::string::npos) << out;
  EXPECT_NE(out.find("ok"), std::string::npos) << out;
  EXPECT_TRUE(bytes_of(index_dir / "data.mdb") == before) << "--check changed data.mdb";
}

TEST_F(Lifecycle, ASecondDaemonRefusesASocketALiveOneAnswersOn) {
  start();
  std::ofstream(dir / "second.yaml") << "state_dir: " << (dir / "state2").string() << "\n"
                                     << "socket: " << socket.string() << "\n";
  DaemonProcess second;
  LaunchOptions o;
  o.args = {"--config", (dir / "second.yaml").string()};
  o.log_file = dir / "second.log";
  second.start(o);
  auto code = second.wait_exit(30s);
  ASSERT_TRUE(code.has_value());
  EXPECT_NE(*code, 0);
  EXPECT_EQ(http().get("/healthz").status, 200);
}

TEST_F(Lifecycle, AStaleSocketFileIsReplaced) {
  // A socket file nobody listens on, as a crash leaves it.
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, socket.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ::close(fd);
  ASSERT_TRUE(fs::is_socket(socket));
  start();
  EXPECT_EQ(http().get("/healthz").status, 200);
}

TEST_F(Lifecycle, LocalDefaultsUnderAStateDir) {
  start_no_wait({}, {}, {"--state-dir", (dir / "local").string()});
  socket = dir / "local/dedupd.sock";
  ASSERT_TRUE(wait_healthy());
  EXPECT_TRUE(fs::is_directory(dir / "local/incoming"));
  EXPECT_TRUE(fs::is_directory(dir / "local/index"));
  auto shard = make_shard({.seed = 11});
  drop_file(dir / "local/incoming", shard.file_name(), shard.bytes);
  EXPECT_TRUE(eventually([&] { return chunk_found(shard.first_chunks[0].to_string()); }));
}

TEST_F(Lifecycle, SighupChangesTheWatchList) {
  fs::create_directories(dir / "second");
  NotifySocket notify(dir / "notify");
  start({}, {notify.env()});
  ASSERT_TRUE(notify.wait_for("READY=1", 30s));

  write_config("", (dir / "second").string());
  daemon.signal(SIGHUP);
  ASSERT_TRUE(notify.wait_for("RELOADING=1", 30s));
  ASSERT_TRUE(notify.wait_for("READY=1", 30s));
  auto status = get_json("/v1/status");
  ASSERT_EQ(status["watch"].size(), 1u);
  EXPECT_EQ(status["watch"][0], (dir / "second").string());

  // The old directory first: if it were still watched, its shard would be
  // taken before the new directory's one.
  auto old_shard = make_shard({.seed = 21});
  auto new_shard = make_shard({.seed = 22});
  drop_file(incoming, old_shard.file_name(), old_shard.bytes);
  drop_file(dir / "second", new_shard.file_name(), new_shard.bytes);
  EXPECT_TRUE(eventually([&] { return chunk_found(new_shard.first_chunks[0].to_string()); }));
  EXPECT_FALSE(chunk_found(old_shard.first_chunks[0].to_string()));
  EXPECT_EQ(shard_count("live"), 1u);
}

// index.filter_memory reaches the index: the chunk filters, built after
// READY, stay within it and status shows them against it.
TEST_F(Lifecycle, TheChunkFiltersKeepToTheirConfiguredMemory) {
  write_config("index:\n  filter_memory: 1M\n");
  start();
  auto shard = make_shard({.seed = 31});
  drop_file(incoming, shard.file_name(), shard.bytes);
  ASSERT_TRUE(eventually([&] { return chunk_found(shard.first_chunks[0].to_string()); }));
  nlohmann::json filter;
  EXPECT_TRUE(eventually([&] {
    filter = get_json("/v1/status")["stats"]["chunk_filter"];
    return filter["in_service"].get<bool>() && filter["entries"].get<std::uint64_t>() > 0;
  })) << filter.dump();
  EXPECT_EQ(filter["max_bytes"], 1u << 20);
  EXPECT_GT(filter["bytes"].get<std::uint64_t>(), 0u);
  EXPECT_LE(filter["bytes"].get<std::uint64_t>(), 1u << 20);
  EXPECT_EQ(filter["at_bound"], true) << "1 MiB is below the floor of both filters: " << filter.dump();
  EXPECT_TRUE(chunk_found(shard.first_chunks[0].to_string()));
}

TEST_F(Lifecycle, ABrokenConfigOnSighupKeepsThePreviousOne) {
  NotifySocket notify(dir / "notify");
  start({}, {notify.env()});
  ASSERT_TRUE(notify.wait_for("READY=1", 30s));
  std::ofstream(config) << "watch: [\n";
  daemon.signal(SIGHUP);
  ASSERT_TRUE(notify.wait_for("READY=1", 30s));
  EXPECT_NE(daemon_log().find("not reloaded"), std::string::npos);
  auto shard = make_shard({.seed = 31});
  drop_file(incoming, shard.file_name(), shard.bytes);
  EXPECT_TRUE(eventually([&] { return chunk_found(shard.first_chunks[0].to_string()); }));
}

}  // namespace
}  // namespace dedupd::itest
