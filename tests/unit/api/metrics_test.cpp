// The request metrics on /metrics (daemon/api/http/metrics), rendered as
// Prometheus reads them: counts by route and status (only statuses seen,
// aliases of one route in one series, what matched nothing apart), a
// cumulative latency histogram per route, the lookup, global-dedup and
// endpoint counters, the build and the process's own numbers.
#include "daemon/api/http/metrics.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <sstream>
#include <string>
#include <vector>

namespace dedupd::daemon::api::http {
namespace {

using namespace std::chrono_literals;

std::string page(const Metrics& m) {
  std::string out;
  m.render(out);
  return out;
}

bool has_line(const std::string& page, const std::string& line) {
  std::istringstream in(page);
  for (std::string l; std::getline(in, l);)
    if (l == line) return true;
  return false;
}

TEST(Metrics, RequestsAreCountedByRouteAndStatusOnlyAsSeen) {
  // Ids 0 and 2 are aliases of one route: one series.
  Metrics m({"chunk", "status", "chunk"});
  m.record(0, 200, 1ms);
  m.record(2, 200, 1ms);
  m.record(0, 404, 1ms);
  m.record(1, 418, 1ms);                 // a status of no series of its own
  m.record(m.unmatched_id(), 404, 1ms);  // matched no route
  m.record(99, 405, 1ms);                // an id past the table counts as unmatched
  const std::string p = page(m);
  EXPECT_TRUE(has_line(p, "# TYPE dedupd_http_requests_total counter")) << p;
  EXPECT_TRUE(has_line(p, "dedupd_http_requests_total{route=\"chunk\",status=\"200\"} 2")) << p;
  EXPECT_TRUE(has_line(p, "dedupd_http_requests_total{route=\"chunk\",status=\"404\"} 1")) << p;
  EXPECT_TRUE(has_line(p, "dedupd_http_requests_total{route=\"status\",status=\"other\"} 1")) << p;
  EXPECT_TRUE(has_line(p, "dedupd_http_requests_total{route=\"unmatched\",status=\"404\"} 1")) << p;
  EXPECT_TRUE(has_line(p, "dedupd_http_requests_total{route=\"unmatched\",status=\"405\"} 1")) << p;
  EXPECT_EQ(p.find("status=\"500\""), std::string::npos) << "a status never answered has no sample";
}

TEST(Metrics, TheLatencyHistogramIsCumulativeWithASumAndACount) {
  Metrics m({"chunk", "idle"});
  m.record(0, 200, 40us);   // <= 0.00005
  m.record(0, 200, 100us);  // <= 0.0001, on the bound
  m.record(0, 200, 3ms);    // <= 0.005
  m.record(0, 200, 20s);    // past every bound
  const std::string p = page(m);
  EXPECT_TRUE(has_line(p, "# TYPE dedupd_http_request_duration_seconds histogram"));
  EXPECT_TRUE(has_line(p, "dedupd_http_request_duration_seconds_bucket{route=\"chunk\",le=\"5e-05\"} 1")) << p;
  EXPECT_TRUE(has_line(p, "dedupd_http_request_duration_seconds_bucket{route=\"chunk\",le=\"0.0001\"} 2")) << p;
  EXPECT_TRUE(has_line(p, "dedupd_http_request_duration_seconds_bucket{route=\"chunk\",le=\"0.0025\"} 2")) << p;
  EXPECT_TRUE(has_line(p, "dedupd_http_request_duration_seconds_bucket{route=\"chunk\",le=\"0.005\"} 3")) << p;
  EXPECT_TRUE(has_line(p, "dedupd_http_request_duration_seconds_bucket{route=\"chunk\",le=\"10\"} 3")) << p;
  EXPECT_TRUE(has_line(p, "dedupd_http_request_duration_seconds_bucket{route=\"chunk\",le=\"+Inf\"} 4")) << p;
  EXPECT_TRUE(has_line(p, "dedupd_http_request_duration_seconds_count{route=\"chunk\"} 4")) << p;
  EXPECT_TRUE(has_line(p, "dedupd_http_request_duration_seconds_sum{route=\"chunk\"} 20.00314")) << p;
  EXPECT_EQ(p.find("route=\"idle\",le="), std::string::npos) << "a route never asked has no histogram";
}

TEST(Metrics, LookupGlobalDedupAndEndpointCounters) {
  Metrics m({});
  m.count_lookups(10, 7);
  m.count_lookups(5, 0);
  m.count_global_dedup(true);
  m.count_global_dedup(false);
  m.count_global_dedup(false);
  m.count_endpoint_query(true);
  m.count_endpoint_query(false);
  m.count_endpoint_query(false);
  const auto q = m.endpoint_queries();
  EXPECT_EQ(q.local, 1u);
  EXPECT_EQ(q.forwarded, 2u);
  EXPECT_GT(q.since, 1'700'000'000u);
  const std::string p = page(m);
  EXPECT_TRUE(has_line(p, "dedupd_chunk_lookups_total 15")) << p;
  EXPECT_TRUE(has_line(p, "dedupd_chunk_lookups_found_total 7")) << p;
  EXPECT_TRUE(has_line(p, "dedupd_global_dedup_replies_total{result=\"hit\"} 1")) << p;
  EXPECT_TRUE(has_line(p, "dedupd_global_dedup_replies_total{result=\"miss\"} 2")) << p;
  EXPECT_TRUE(has_line(p, "dedupd_xet_endpoint_queries_total{answered=\"local\"} 1")) << p;
  EXPECT_TRUE(has_line(p, "dedupd_xet_endpoint_queries_total{answered=\"forwarded\"} 2")) << p;
  EXPECT_NE(p.find("\ndedupd_build_info{version=\""), std::string::npos) << p;
  // The process's own numbers under the names client libraries give them.
  for (const char* name : {"process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds",
                           "process_max_fds", "process_start_time_seconds"})
    EXPECT_NE(p.find(std::string("\n# TYPE ") + name + " "), std::string::npos) << name;
}

TEST(PromWriter, FamiliesAndSamplesAsTheTextFormatHasThem) {
  std::string out;
  PromWriter w(out);
  w.family("x_total", "counter", "Things.");
  w.sample("x_total", "", std::uint64_t(3));
  w.sample("x_total", "a=\"b\"", 0.5);
  EXPECT_EQ(out, "# HELP x_total Things.\n# TYPE x_total counter\nx_total 3\nx_total{a=\"b\"} 0.5\n");
}

}  // namespace
}  // namespace dedupd::daemon::api::http
