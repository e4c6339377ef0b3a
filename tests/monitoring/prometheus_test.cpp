// A real Prometheus (Debian's) scraping two dedupd of a fleet through their
// metrics listeners (metrics.listen), with the rules packaging/prometheus
// ships: when the fleet's database stops, DedupdFleetUnreachable fires
// within its `for:` and two scrape intervals, and it resolves once the
// database is back; and every query of the dashboard finds series. The
// rules are the shipped ones with each `for:` cut to seconds, so the test
// takes seconds, not minutes.
#include <curl/curl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "harness/daemon_process.hpp"
#include "harness/eventually.hpp"
#include "harness/fleet_host.hpp"
#include "harness/make_shard.hpp"
#include "tests/support/text_file.hpp"
#include "tests/unit/fleet/pg_support.hpp"

namespace dedupd::itest {
namespace {

namespace fs = std::filesystem;
using fleet::test::Cluster;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// What the test's Prometheus runs with: short enough that the whole test
// takes under a minute, and the bound it checks is the one an operator's
// settings give (scaled down).
constexpr auto kScrapeInterval = 1s;
constexpr auto kFor = 3s;  // every `for:` of the shipped rules, shortened

const fs::path kPrometheusDir = DEDUPD_PROMETHEUS_DIR;
const char* const kPrometheus = "/usr/bin/prometheus";

std::uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error("no free port");
  ::close(fd);
  return ntohs(a.sin_port);
}

std::size_t append_body(char* data, std::size_t size, std::size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// GET over TCP: status (0: no answer) and body.
std::pair<long, std::string> http_get(const std::string& url) {
  std::string body;
  long status = 0;
  CURL* c = curl_easy_init();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &append_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
  if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(c);
  return {status, body};
}

// A Prometheus of the test's own, on loopback, its data in a scratch dir.
class Prometheus {
 public:
  Prometheus(const fs::path& dir, const std::vector<std::string>& targets) : dir_(dir), port_(free_port()) {
    fs::create_directories(dir);
    // The shipped rules, each `for:` shortened (recording rules as they are).
    std::string alerts = tests::file_text(kPrometheusDir / "dedupd-alerts.yml");
    alerts = std::regex_replace(alerts, std::regex(R"(for: \d+[smh])"),
                                "for: " + std::to_string(std::chrono::seconds(kFor).count()) + "s");
    std::ofstream(dir / "dedupd-alerts.yml") << alerts;
    fs::copy_file(kPrometheusDir / "dedupd-recording.yml", dir / "dedupd-recording.yml");
    std::ofstream config(dir / "prometheus.yml");
    const auto interval = std::to_string(std::chrono::seconds(kScrapeInterval).count()) + "s";
    config << "global:\n  scrape_interval: " << interval << "\n  scrape_timeout: " << interval
           << "\n  evaluation_interval: " << interval
           << "\nrule_files:\n  - dedupd-alerts.yml\n  - dedupd-recording.yml\n"
              "scrape_configs:\n  - job_name: dedupd\n    static_configs:\n      - targets:\n";
    for (const auto& t : targets) config << "          - \"" << t << "\"\n";
    config.close();
    LaunchOptions o;
    o.program = kPrometheus;
    o.args = {"--config.file=" + (dir / "prometheus.yml").string(), "--storage.tsdb.path=" + (dir / "data").string(),
              "--web.listen-address=127.0.0.1:" + std::to_string(port_), "--log.level=warn"};
    o.log_file = dir / "prometheus.log";
    o.work_dir = dir;
    process_.start(o);
  }

  bool ready() { return process_.running() && http_get(base() + "/-/ready").first == 200; }
  std::string log() const { return tests::file_text(dir_ / "prometheus.log"); }

  // The result list of an instant query (empty on any failure).
  json query(const std::string& expr) {
    CURL* c = curl_easy_init();
    char* escaped = curl_easy_escape(c, expr.c_str(), int(expr.size()));
    std::string url = base() + "/api/v1/query?query=" + escaped;
    curl_free(escaped);
    curl_easy_cleanup(c);
    auto [status, body] = http_get(url);
    if (status != 200) return json::array();
    json doc = json::parse(body, nullptr, false);
    if (doc.is_discarded() || doc["status"] != "success") return json::array();
    return doc["data"]["result"];
  }
  // The alerts pending or firing, as /api/v1/alerts lists them.
  json alerts() {
    auto [status, body] = http_get(base() + "/api/v1/alerts");
    json doc = json::parse(body, nullptr, false);
    if (status != 200 || doc.is_discarded()) return json::array();
    return doc["data"]["alerts"];
  }
  // The state of `name` for `instance`: "firing", "pending" or "" (neither).
  std::string alert_state(const std::string& name, const std::string& instance) {
    for (const auto& a : alerts())
      if (a["labels"]["alertname"] == name && a["labels"]["instance"] == instance) return a["state"];
    return "";
  }

 private:
  std::string base() const { return "http://127.0.0.1:" + std::to_string(port_); }
  fs::path dir_;
  std::uint16_t port_;
  DaemonProcess process_;
};

// What a host's TCP listener says dedupd_fleet_connected is; nullopt when
// it does not say.
std::optional<std::string> fleet_connected(const std::string& target) {
  auto [status, page] = http_get("http://" + target + "/metrics");
  if (status != 200) return std::nullopt;
  std::smatch m;
  if (!std::regex_search(page, m, std::regex("\ndedupd_fleet_connected ([0-9]+)\n"))) return std::nullopt;
  return m[1].str();
}

// Every query of the dashboard, its variables as Grafana fills them for
// "all hosts".
std::vector<std::string> dashboard_queries() {
  json doc = json::parse(tests::file_text(kPrometheusDir / "dedupd-dashboard.json"));
  std::vector<std::string> out;
  for (const auto& p : doc["panels"])
    for (const auto& t : p.value("targets", json::array())) {
      std::string e = t["expr"];
      e = std::regex_replace(e, std::regex(R"(\$__rate_interval)"), "30s");
      e = std::regex_replace(e, std::regex(R"(\$job)"), "dedupd");
      e = std::regex_replace(e, std::regex(R"(\$instance)"), ".+");
      out.push_back(e);
    }
  return out;
}

class Monitoring : public FleetHostsTest {
 protected:
  Monitoring() : FleetHostsTest("monitoring-it") {}
};

TEST_F(Monitoring, PrometheusSeesTheFleetGoAndComeBackAndTheDashboardHasData) {
  ASSERT_TRUE(fs::exists(kPrometheus)) << kPrometheus
                                       << " missing: packaging/install-deps installs Debian's prometheus";
  Cluster pg = Cluster::start_own();
  const std::string url = pg.primary_url(pg.new_database());
  std::vector<std::string> targets;
  for (const char* name : {"host-a", "host-b"}) {
    FleetHost& h = keep(std::make_unique<FleetHost>(root, name));
    targets.push_back("127.0.0.1:" + std::to_string(free_port()));
    FleetConfig c;
    c.log_level = "info";
    c.extra = "metrics:\n  listen: " + targets.back() + "\n";
    h.write_config(url, c);
    h.start();
    ASSERT_FALSE(HasFailure());
  }
  FleetHost& a = *hosts[0];
  FleetHost& b = *hosts[1];
  // A shard that expires (the next-expiry panel), published to the fleet.
  MadeShard s =
      make_shard({.seed = 6001, .xorbs = 1, .chunks_per_xorb = 3, .expiry = std::uint64_t(std::time(nullptr)) + 86400});
  drop_file(a.incoming, s.file_name(), s.bytes);
  ASSERT_TRUE(eventually([&] { return b.http().get("/v1/chunk/" + s.first_chunks[0].to_string()).status == 200; }));
  // Lookups that find and that miss, for the query panels.
  for (int i = 0; i < 5; ++i) {
    a.http().get("/v1/chunk/" + s.raw_chunks[std::size_t(i) % s.raw_chunks.size()].to_string());
    a.http().get("/v1/chunk/" + std::string(64, char('1' + i)));
  }

  Prometheus prom(root / "prometheus", targets);
  ASSERT_TRUE(eventually([&] { return prom.ready(); }, 30s)) << prom.log();
  ASSERT_TRUE(eventually([&] { return prom.query("up{job=\"dedupd\"} == 1").size() == 2; }, 20s))
      << "Prometheus does not scrape both hosts:\n"
      << prom.query("up").dump() << prom.log();
  // A healthy fleet raises no alert, though every `for:` is seconds long.
  std::this_thread::sleep_for(kFor + 2 * kScrapeInterval);
  EXPECT_EQ(prom.alerts(), json::array());

  pg.stop_primary();
  // The publishers notice at their next call: a new shard makes it now.
  MadeShard later = make_shard({.seed = 6002, .xorbs = 1, .chunks_per_xorb = 3});
  drop_file(a.incoming, later.file_name(), later.bytes);
  ASSERT_TRUE(eventually([&] { return fleet_connected(targets[0]) == "0"; }, 30s)) << a.log_text();
  const auto unreachable = Clock::now();
  ASSERT_TRUE(eventually([&] { return prom.alert_state("DedupdFleetUnreachable", targets[0]) == "firing"; }, 30s))
      << prom.alerts().dump(1);
  const auto fired_after = Clock::now() - unreachable;
  // Prometheus reads the 0 at its next scrape, the rule sees it at its next
  // evaluation (the same interval here) and fires `for:` later; the test
  // polls every 25 ms and a loaded machine schedules late, hence a second.
  EXPECT_LE(fired_after, kFor + 2 * kScrapeInterval + 1s) << std::chrono::duration<double>(fired_after).count() << " s";
  std::printf("DedupdFleetUnreachable fired %.1f s after host-a's metrics said 0 (for: %lld s, scrape %lld s)\n",
              std::chrono::duration<double>(fired_after).count(), (long long)std::chrono::seconds(kFor).count(),
              (long long)std::chrono::seconds(kScrapeInterval).count());
  // Only the fleet is wrong, and the page still says who to ask.
  for (const auto& alert : prom.alerts()) {
    EXPECT_EQ(alert["labels"]["alertname"], "DedupdFleetUnreachable") << alert.dump();
    EXPECT_NE(alert["annotations"]["description"].get<std::string>().find("dedupctl fleet status"), std::string::npos);
  }

  pg.start_primary();
  ASSERT_TRUE(eventually([&] { return fleet_connected(targets[0]) == "1"; }, 30s)) << a.log_text();
  const auto back = Clock::now();
  ASSERT_TRUE(eventually([&] { return prom.alert_state("DedupdFleetUnreachable", targets[0]).empty(); }, 30s))
      << prom.alerts().dump(1);
  std::printf("and resolved %.1f s after they said 1 again\n",
              std::chrono::duration<double>(Clock::now() - back).count());
  EXPECT_LE(Clock::now() - back, 2 * kScrapeInterval + 1s);

  // Every panel of the dashboard has data on this fleet.
  for (const auto& q : dashboard_queries()) {
    bool found = eventually([&] { return !prom.query(q).empty(); }, 10s, 200ms);
    EXPECT_TRUE(found) << "no series for the dashboard's query: " << q;
  }
}

}  // namespace
}  // namespace dedupd::itest
