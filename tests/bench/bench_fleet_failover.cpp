// bench_fleet_failover: what a failover of the fleet database costs dedupd.
// A real pg_auto_failover formation (tests/fleet/pg_formation: a monitor and
// two data nodes) and two real dedupd on its multi-host uri, on their
// default bounds (lookup_timeout 50 ms). Both drop a shard every 100 ms and
// stream lookups of a chunk only the fleet knows; then the primary is
// killed (kill -9 of its pg_autoctl and PostgreSQL). Per round it prints,
// next to the time pg_auto_failover took to promote the standby (the
// baseline: dedupd cannot publish sooner), the time from the kill to the
// first publish the new primary accepted, and the lookups answered
// meanwhile with the slowest. The old primary then rejoins as a standby and
// the next round kills the other node. Asserts nothing beyond every lookup
// getting an answer (docs/PERFORMANCE.md, Fleet failover).
//
//   bench_fleet_failover [--quick] [--rounds N] [--monitor-defaults]
//
// --monitor-defaults runs the monitor on pg_auto_failover's own health-check
// settings instead of the tightened ones of pg_formation.
#include <libpq-fe.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "harness/eventually.hpp"
#include "harness/fleet_host.hpp"
#include "harness/http_client.hpp"
#include "harness/make_shard.hpp"
#include "harness/pg_formation.hpp"

namespace fs = std::filesystem;
using namespace dedupd::itest;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kLookupTimeoutMs = 50;  // dedupd's default

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

bool until(const std::function<bool()>& pred) {
  return eventually(pred, std::chrono::seconds(120), std::chrono::milliseconds(20));
}

using Daemon = LaunchedFleetHost;

// Lookups of a chunk only the fleet knows, on one host, timed each.
class Lookups {
 public:
  Lookups(const fs::path& socket, const std::string& chunk)
      : thread_([this, s = socket.string(), chunk] {
          HttpClient client(s);
          while (!stop_) {
            auto t0 = Clock::now();
            Response r = client.get("/v1/chunk/" + chunk);
            double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
            json doc = json::parse(r.body, nullptr, false);
            std::lock_guard lock(mu_);
            if (!window_) continue;
            ++asked_;
            max_ms_ = std::max(max_ms_, ms);
            if (r.status == 200 && doc.is_object()) ++from_fleet_;
            else if (r.status == 404 && doc.is_object() && doc.value("fleet", "") == "unavailable") ++marked_;
            else ++unanswered_;
          }
        }) {}
  ~Lookups() {
    stop_ = true;
    thread_.join();
  }
  void open_window() {
    std::lock_guard lock(mu_);
    window_ = true;
    asked_ = from_fleet_ = marked_ = unanswered_ = 0;
    max_ms_ = 0;
  }
  struct Figures {
    std::uint64_t asked, from_fleet, marked, unanswered;
    double max_ms;
  };
  Figures close_window() {
    std::lock_guard lock(mu_);
    window_ = false;
    return {asked_, from_fleet_, marked_, unanswered_, max_ms_};
  }

 private:
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  bool window_ = false;
  std::uint64_t asked_ = 0, from_fleet_ = 0, marked_ = 0, unanswered_ = 0;
  double max_ms_ = 0;
  std::thread thread_;
};

// The number `sql` answers on one node; -1 while the node does not answer.
long long number_on(const std::string& url, const char* sql) {
  PGconn* c = PQconnectdb((url + " connect_timeout=1").c_str());
  long long n = -1;
  if (PQstatus(c) == CONNECTION_OK) {
    PGresult* r = PQexec(c, sql);
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) n = std::atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
  }
  PQfinish(c);
  return n;
}

// Holds on one node; -1 while it does not answer as a primary.
long long primary_holds(const std::string& url) {
  return number_on(url, "SELECT CASE WHEN pg_is_in_recovery() THEN -1 ELSE (SELECT count(*) FROM dedupd.hold) END");
}

long long any_holds(const std::string& url) { return number_on(url, "SELECT count(*) FROM dedupd.hold"); }

struct Round {
  double promoted_s = 0, first_publish_s = 0;
  Lookups::Figures lookups{};
};

int run(int rounds, bool monitor_defaults) {
  if (monitor_defaults) ::setenv("PG_FORMATION_MONITOR_CONF", "# pg_auto_failover's own health checks", 1);
  std::string tmpl = (fs::temp_directory_path() / "dedupd-bench-failover-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) return 1;
  const fs::path root = tmpl;
  int rc = 0;
  {
    PgFormation pg;
    Daemon a(root, "host-a", pg.url());
    Daemon b(root, "host-b", pg.url());
    a.drop(9001);
    b.drop(9002);
    for (Daemon* d : {&a, &b}) {
      Daemon& other = d == &a ? b : a;
      const std::string chunk = other.dropped().front().first_chunks[0].to_string();
      if (!until([&] { return d->http().get("/v1/chunk/" + chunk).status == 200; })) {
        std::fprintf(stderr, "bench_fleet_failover: %s never answered from the fleet; see %s\n", d->name.c_str(),
                     d->log.c_str());
        return 1;
      }
    }
    Lookups on_a(a.socket, b.dropped().front().first_chunks[0].to_string());
    Lookups on_b(b.socket, a.dropped().front().first_chunks[0].to_string());
    // Stopped and joined however the rounds end (a failed step throws).
    Publishers publishing(a, b, 9010, std::chrono::milliseconds(100));
    std::vector<Round> results;
    for (int i = 0; i < rounds && rc == 0; ++i) {
      const std::string dead = pg.primary();
      const std::string next = dead == "node1" ? "node2" : "node1";
      std::this_thread::sleep_for(std::chrono::seconds(1));  // publishing and lookups under way
      on_a.open_window();
      on_b.open_window();
      auto t0 = Clock::now();
      if (std::string e = pg.kill(dead); !e.empty()) throw std::runtime_error(e);
      // Synchronous replication: the standby already has every commit.
      const long long before = any_holds(pg.node_url(next));
      Round r;
      bool promoted = false;
      if (!until([&] {
            if (!promoted && pg.primary() == next) {
              promoted = true;
              r.promoted_s = seconds_since(t0);
            }
            return primary_holds(pg.node_url(next)) > before;
          })) {
        std::fprintf(stderr, "bench_fleet_failover: no publish reached %s\n", next.c_str());
        rc = 1;
        break;
      }
      r.first_publish_s = seconds_since(t0);
      if (!promoted) r.promoted_s = r.first_publish_s;  // seen together
      std::this_thread::sleep_for(std::chrono::seconds(1));
      auto fa = on_a.close_window();
      auto fb = on_b.close_window();
      r.lookups = {fa.asked + fb.asked, fa.from_fleet + fb.from_fleet, fa.marked + fb.marked,
                   fa.unanswered + fb.unanswered, std::max(fa.max_ms, fb.max_ms)};
      results.push_back(r);
      if (r.lookups.unanswered) rc = 1;
      if (i + 1 < rounds) {
        if (std::string e = pg.run(dead); !e.empty()) throw std::runtime_error(e);
        if (std::string e = pg.wait_settled(); !e.empty()) throw std::runtime_error(e);
      }
    }
    publishing.stop();

    double load[3] = {0, 0, 0};
    std::ifstream("/proc/loadavg") >> load[0] >> load[1] >> load[2];
    std::string monitor = "pg_formation's: checks every 0.5 s, unhealthy after 2 s";
    if (monitor_defaults) monitor = "pg_auto_failover's defaults";
    else if (const char* conf = std::getenv("PG_FORMATION_MONITOR_CONF")) {
      monitor = conf;
      std::replace(monitor.begin(), monitor.end(), '\n', ';');
    }
    std::printf("fleet failover: kill -9 of the primary of a pg_auto_failover formation (monitor: %s), two dedupd\n",
                monitor.c_str());
    std::printf("publishing a shard every 100 ms each and streaming lookups (lookup_timeout %d ms; goal: within\n",
                kLookupTimeoutMs);
    std::printf("30 s, every lookup answered, none past %d ms); load average %.2f %.2f %.2f, %u cores\n",
                kLookupTimeoutMs + 1000, load[0], load[1], load[2], std::thread::hardware_concurrency());
    std::printf(
        "| round | promoted by pg_auto_failover | first publish on the new primary | lookups answered | "
        "from the fleet | local, marked | slowest |\n");
    std::printf("|---|---|---|---|---|---|---|\n");
    for (std::size_t i = 0; i < results.size(); ++i) {
      const Round& r = results[i];
      std::printf("| %zu | %.1f s | %.1f s | %llu of %llu | %llu | %llu | %.0f ms |\n", i + 1, r.promoted_s,
                  r.first_publish_s, static_cast<unsigned long long>(r.lookups.asked - r.lookups.unanswered),
                  static_cast<unsigned long long>(r.lookups.asked),
                  static_cast<unsigned long long>(r.lookups.from_fleet),
                  static_cast<unsigned long long>(r.lookups.marked), r.lookups.max_ms);
    }
    if (rc) std::fprintf(stderr, "bench_fleet_failover: some lookups got no answer\n");
  }
  std::error_code ec;
  fs::remove_all(root, ec);
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 3;
  bool monitor_defaults = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") rounds = 1;
    else if (a == "--rounds" && i + 1 < argc) rounds = std::max(1, std::atoi(argv[++i]));
    else if (a == "--monitor-defaults") monitor_defaults = true;
    else {
      std::fprintf(stderr, "usage: bench_fleet_failover [--quick] [--rounds N] [--monitor-defaults]\n");
      return 2;
    }
  }
  try {
    return run(rounds, monitor_defaults);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_fleet_failover: %s\n", e.what());
    return 1;
  }
}
