// Request metrics for /metrics: counts by route and status, and a latency
// histogram per route. Lock-free counters, because every request records
// into them from every HTTP thread. The page ends with what the HTTP layer
// knows without the daemon: the build, and the process's own numbers
// (process_metrics.hpp).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dedupd::daemon::api::http {

// A label value in the Prometheus text format: backslash, quote and newline
// escaped (a cache path may hold any of them).
std::string prom_label(std::string_view v);

// Appends one Prometheus metric family (HELP/TYPE lines + samples).
class PromWriter {
 public:
  explicit PromWriter(std::string& out) : out_(out) {}
  void family(std::string_view name, std::string_view type, std::string_view help);
  // labels: already formatted `a="x",b="y"` or empty.
  void sample(std::string_view name, std::string_view labels, double value);
  void sample(std::string_view name, std::string_view labels, std::uint64_t value);

 private:
  std::string& out_;
};

class Metrics {
 public:
  // The label of each route id; ids sharing a name (aliases of one route)
  // share a series. An extra "unmatched" series takes requests that matched
  // no route.
  explicit Metrics(const std::vector<std::string>& route_names);

  void record(std::size_t route_id, unsigned status, std::chrono::nanoseconds latency);
  void count_lookups(std::uint64_t hashes, std::uint64_t found);
  void count_global_dedup(bool hit);
  // A global-dedup query the local Xet endpoint passed on (X-Dedupd-Via):
  // answered here (200), or anything else, which nginx sends upstream.
  void count_endpoint_query(bool local);
  struct EndpointQueries {
    std::uint64_t local = 0, forwarded = 0;
    std::uint64_t since = 0;  // unix s: counting starts with the daemon's HTTP layer
  };
  EndpointQueries endpoint_queries() const;

  std::size_t unmatched_id() const { return slot_of_.size() - 1; }
  void render(std::string& out) const;

  // Upper bounds of the latency buckets, in seconds.
  static constexpr std::array<double, 15> kBuckets = {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                                      0.025,   0.05,   0.1,     0.25,   1.0,   2.5,    10.0};

 private:
  static constexpr std::array<unsigned, 10> kStatuses = {200, 400, 403, 404, 405, 413, 422, 500, 503, 0};  // 0: other
  struct PerRoute {
    std::array<std::atomic<std::uint64_t>, kStatuses.size()> by_status{};
    std::array<std::atomic<std::uint64_t>, kBuckets.size() + 1> buckets{};  // +Inf last
    std::atomic<std::uint64_t> sum_ns{0};
    std::atomic<std::uint64_t> count{0};
  };

  std::vector<std::string> names_;    // unique labels
  std::vector<std::size_t> slot_of_;  // route id -> index into names_
  std::unique_ptr<PerRoute[]> routes_;
  std::atomic<std::uint64_t> lookups_{0}, lookups_found_{0};
  std::atomic<std::uint64_t> dedup_hits_{0}, dedup_misses_{0};
  std::atomic<std::uint64_t> endpoint_local_{0}, endpoint_forwarded_{0};
  std::uint64_t since_ = 0;
  std::optional<double> process_start_;  // read once: it never changes
};

}  // namespace dedupd::daemon::api::http
