// A real Prometheus (Debian's) scraping dedupd of a fleet through their
// metrics listeners (metrics.listen), with the rules packaging/prometheus
// ships (prometheus.hpp: each `for:` cut to seconds, and checked to be the
// shipped rules otherwise): when the fleet's database stops,
// DedupdFleetUnreachable fires, and it resolves once the database is back;
// every query of the dashboard finds series; an outbox entry parked, one
// older than half an hour, and an outbox that grows while connected raise
// theirs. The alerts of a host without a fleet are raised in alerts_test.cpp.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "harness/cannot_run.hpp"
#include "harness/damaged_record.hpp"
#include "harness/eventually.hpp"
#include "harness/fleet_host.hpp"
#include "harness/make_shard.hpp"
#include "prometheus.hpp"
#include "tests/support/text_file.hpp"
#include "tests/unit/fleet/pg_support.hpp"

namespace dedupd::itest {
namespace {

namespace fs = std::filesystem;
using fleet::test::Admin;
using fleet::test::Cluster;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr auto kScrapeInterval = Prometheus::kScrapeInterval;
constexpr auto kFor = Prometheus::kFor;

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
  json doc = json::parse(tests::file_text(fs::path(DEDUPD_PROMETHEUS_DIR) / "dedupd-dashboard.json"));
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
  Cluster pg = Cluster::start_own();
  const std::string url = pg.primary_url(pg.new_database());
  std::vector<std::string> targets;
  for (const char* name : {"host-a", "host-b"}) {
    FleetHost& h = keep(std::make_unique<FleetHost>(root, name));
    targets.push_back("127.0.0.1:" + std::to_string(free_port()));
    FleetConfig c;
    c.log_level = "info";
    c.extra = "metrics:\n  listen: " + targets.back() + "\n";
    // A local Xet endpoint's settings naming a download cache of one file,
    // for the download panels (dedupd walks it; no nginx needed).
    const fs::path cache = h.dir / "xet-cache" / "a" / "aa";
    fs::create_directories(cache);
    std::ofstream(cache / std::string(32, 'a')) << "a cached range";
    std::ofstream(h.dir / "xet-endpoint.conf") << "cache_dir = " << (h.dir / "xet-cache").string() << "\n";
    c.extra += "xet_endpoint:\n  config: " + (h.dir / "xet-endpoint.conf").string() + "\n";
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
  prom.wait_ready();
  ASSERT_TRUE(eventually([&] { return prom.query("up{job=\"dedupd\"} == 1").size() == 2; }, 20s))
      << "Prometheus does not scrape both hosts:\n"
      << prom.query("up").dump() << prom.log();
  // A healthy fleet raises no alert: not even a pending one, once the rules
  // have seen both hosts.
  prom.wait_evaluated();
  EXPECT_EQ(prom.alerts(), json::array());

  pg.stop_primary();
  // The publishers notice at their next call: a new shard makes it now.
  MadeShard later = make_shard({.seed = 6002, .xorbs = 1, .chunks_per_xorb = 3});
  drop_file(a.incoming, later.file_name(), later.bytes);
  ASSERT_TRUE(eventually([&] { return fleet_connected(targets[0]) == "0"; }, 30s)) << a.log_text();
  const auto unreachable = Clock::now();
  ASSERT_TRUE(prom.fires("DedupdFleetUnreachable", targets[0], 30s)) << prom.alerts().dump(1);
  // Prometheus reads the 0 at its next scrape, the rule sees it at its next
  // evaluation (the same interval here) and fires `for:` later: printed, not
  // asserted (a loaded machine schedules late).
  const auto fired_after = Clock::now() - unreachable;
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
  ASSERT_TRUE(prom.resolves("DedupdFleetUnreachable", targets[0], 30s)) << prom.alerts().dump(1);
  std::printf("and resolved %.1f s after they said 1 again\n",
              std::chrono::duration<double>(Clock::now() - back).count());

  // Every panel of the dashboard has data on this fleet.
  for (const auto& q : dashboard_queries()) {
    bool found = eventually([&] { return !prom.query(q).empty(); }, 10s, 200ms);
    EXPECT_TRUE(found) << "no series for the dashboard's query: " << q;
  }
}

// A host's metrics listener on a free port, in its config; returns it.
std::string with_metrics(FleetHost& h, const std::string& url, const std::string& extra = "") {
  std::string target = "127.0.0.1:" + std::to_string(free_port());
  FleetConfig config;  // (set one by one: g++ 12 warns of fields a designated list leaves out)
  config.extra = "metrics:\n  listen: " + target + "\n" + extra;
  h.write_config(url, config);
  return target;
}

// A shard whose index record is damaged does not rebuild for publishing:
// its outbox entry is parked (written into the index before the start, as
// Fleet.AShardThatCannotBePublishedIsParkedShownAndRetried does).
TEST_F(Monitoring, AShardThatCannotBePublishedIsParked) {
  Cluster pg = Cluster::start_own();
  FleetHost& a = keep(std::make_unique<FleetHost>(root, "host-a"));
  // The scrub would find the damaged record too, and rebuild the whole
  // index: off.
  const std::string target = with_metrics(a, pg.primary_url(pg.new_database()), "index:\n  scrub_interval: never\n");
  MadeShard good = make_shard({.seed = 6101, .xorbs = 1, .chunks_per_xorb = 3, .client_style = true});
  MadeShard bad = make_shard({.seed = 6102, .xorbs = 1, .chunks_per_xorb = 3, .client_style = true});
  index_with_a_damaged_file_record(a.dir / "state" / "index", {&good, &bad}, bad);
  a.start();
  ASSERT_FALSE(HasFailure());
  Prometheus prom(root / "prometheus", {target});
  prom.wait_ready();
  EXPECT_TRUE(prom.fires("DedupdShardsParked", target)) << prom.alerts().dump(1) << a.log_text();
  EXPECT_EQ(a.fleet_link()["outbox"]["parked"], 1);
}

// No fleet primary answers (nothing listens where fleet.url points); the
// host indexes a shard, which waits in its outbox; then it runs on with its
// clock 40 minutes on (libfaketime): by its clock the shard has waited that
// long, unpublished.
TEST_F(Monitoring, AnOutboxEntryOlderThanHalfAnHour) {
  if (libfaketime().empty()) DEDUPD_CANNOT_RUN("libfaketime is not installed");
  FleetHost& a = keep(std::make_unique<FleetHost>(root, "host-a"));
  const std::string target =
      with_metrics(a, "postgresql://127.0.0.1:" + std::to_string(free_port()) + "/fleet?connect_timeout=2");
  a.start();
  ASSERT_FALSE(HasFailure());
  a.drop(6201);
  ASSERT_TRUE(eventually([&] { return a.outbox_depth() == 1; })) << a.log_text();
  ASSERT_EQ(a.process.stop(), 0);
  a.env = {"LD_PRELOAD=" + libfaketime(), "FAKETIME=+40m", "TZ=UTC"};
  a.start();
  ASSERT_FALSE(HasFailure());
  Prometheus prom(root / "prometheus", {target});
  prom.wait_ready();
  EXPECT_TRUE(prom.fires("DedupdOutboxOld", target)) << prom.alerts().dump(1) << a.log_text();
  EXPECT_TRUE(prom.fires("DedupdFleetUnreachable", target)) << prom.alerts().dump(1);
}

// The primary takes publishes slower than the host indexes shards: a
// transaction holds the fleet's shard table (as a long migration or a
// VACUUM FULL would), so each publish waits on it, the publisher still
// connected, while shards keep coming. A publish waits at most the fleet's
// statement timeout (60 s) before the link counts as down; this needs a
// fraction of it. Prometheus starts once the outbox is no longer empty: the
// alert wants it never empty over its window.
TEST_F(Monitoring, AnOutboxThatGrowsWhileConnected) {
  Cluster pg = Cluster::start_own();
  const std::string url = pg.primary_url(pg.new_database());
  FleetHost& a = keep(std::make_unique<FleetHost>(root, "host-a"));
  const std::string target = with_metrics(a, url);
  a.start();
  ASSERT_FALSE(HasFailure());
  a.drop(6301);
  ASSERT_TRUE(eventually([&] { return a.fleet_link()["published"] == 1 && a.outbox_depth() == 0; })) << a.log_text();
  Admin admin(url);
  ASSERT_EQ(admin.try_exec("BEGIN; LOCK TABLE dedupd.shard IN ACCESS EXCLUSIVE MODE"), "");
  a.drop(6302);
  ASSERT_TRUE(eventually([&] { return a.outbox_depth() == 1; })) << a.log_text();
  Prometheus prom(root / "prometheus", {target});
  prom.wait_ready();
  std::uint64_t seed = 6303;
  const bool fired = eventually(
      [&] {
        a.drop(seed++);
        return prom.alert_state("DedupdOutboxGrowing", target) == "firing";
      },
      40s, 1s);
  EXPECT_TRUE(fired) << prom.alerts().dump(1) << a.log_text();
  EXPECT_EQ(fleet_connected(target), "1");
  ASSERT_EQ(admin.try_exec("COMMIT"), "");
  EXPECT_TRUE(eventually([&] { return a.outbox_depth() == 0; })) << a.log_text();
  EXPECT_TRUE(prom.resolves("DedupdOutboxGrowing", target, 30s)) << prom.alerts().dump(1);
}

}  // namespace
}  // namespace dedupd::itest
