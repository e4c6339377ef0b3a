#include "daemon/api/http/metrics.hpp"

#include <fmt/format.h>

#include "daemon/api/http/process_metrics.hpp"

#ifndef DEDUPD_VERSION
#define DEDUPD_VERSION "0.0.0"
#endif

namespace dedupd::daemon::api::http {

std::string prom_label(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char ch : v) {
    if (ch == '\\' || ch == '"') out += '\\';
    if (ch == '\n') out += "\\n";
    else out += ch;
  }
  return out;
}

void PromWriter::family(std::string_view name, std::string_view type, std::string_view help) {
  fmt::format_to(std::back_inserter(out_), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void PromWriter::sample(std::string_view name, std::string_view labels, double value) {
  if (labels.empty()) fmt::format_to(std::back_inserter(out_), "{} {}\n", name, value);
  else fmt::format_to(std::back_inserter(out_), "{}{{{}}} {}\n", name, labels, value);
}

void PromWriter::sample(std::string_view name, std::string_view labels, std::uint64_t value) {
  if (labels.empty()) fmt::format_to(std::back_inserter(out_), "{} {}\n", name, value);
  else fmt::format_to(std::back_inserter(out_), "{}{{{}}} {}\n", name, labels, value);
}

Metrics::Metrics(const std::vector<std::string>& route_names)
    : since_(std::uint64_t(
          std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
              .count())),
      process_start_(process_start_time()) {
  auto slot = [&](const std::string& name) {
    for (std::size_t i = 0; i < names_.size(); ++i)
      if (names_[i] == name) return i;
    names_.push_back(name);
    return names_.size() - 1;
  };
  for (const auto& n : route_names) slot_of_.push_back(slot(n));
  slot_of_.push_back(slot("unmatched"));
  routes_ = std::make_unique<PerRoute[]>(names_.size());
}

void Metrics::record(std::size_t route_id, unsigned status, std::chrono::nanoseconds latency) {
  if (route_id >= slot_of_.size()) route_id = unmatched_id();
  PerRoute& r = routes_[slot_of_[route_id]];
  std::size_t s = kStatuses.size() - 1;
  for (std::size_t i = 0; i + 1 < kStatuses.size(); ++i)
    if (kStatuses[i] == status) s = i;
  r.by_status[s].fetch_add(1, std::memory_order_relaxed);

  double seconds = std::chrono::duration<double>(latency).count();
  std::size_t b = 0;
  while (b < kBuckets.size() && seconds > kBuckets[b]) ++b;
  r.buckets[b].fetch_add(1, std::memory_order_relaxed);
  r.sum_ns.fetch_add(std::uint64_t(latency.count()), std::memory_order_relaxed);
  r.count.fetch_add(1, std::memory_order_relaxed);
}

void Metrics::count_lookups(std::uint64_t hashes, std::uint64_t found) {
  lookups_.fetch_add(hashes, std::memory_order_relaxed);
  lookups_found_.fetch_add(found, std::memory_order_relaxed);
}

void Metrics::count_global_dedup(bool hit) {
  (hit ? dedup_hits_ : dedup_misses_).fetch_add(1, std::memory_order_relaxed);
}

void Metrics::count_endpoint_query(bool local) {
  (local ? endpoint_local_ : endpoint_forwarded_).fetch_add(1, std::memory_order_relaxed);
}

Metrics::EndpointQueries Metrics::endpoint_queries() const {
  return {endpoint_local_.load(std::memory_order_relaxed), endpoint_forwarded_.load(std::memory_order_relaxed), since_};
}

void Metrics::render(std::string& out) const {
  PromWriter w(out);
  w.family("dedupd_http_requests_total", "counter", "HTTP requests answered, by route and status.");
  for (std::size_t i = 0; i < names_.size(); ++i)
    for (std::size_t s = 0; s < kStatuses.size(); ++s) {
      std::uint64_t n = routes_[i].by_status[s].load(std::memory_order_relaxed);
      if (n == 0) continue;  // keep the page short: only statuses seen
      std::string status = kStatuses[s] ? std::to_string(kStatuses[s]) : "other";
      w.sample("dedupd_http_requests_total", fmt::format("route=\"{}\",status=\"{}\"", names_[i], status), n);
    }

  w.family("dedupd_http_request_duration_seconds", "histogram",
           "Time from request headers to the response queued, by route.");
  for (std::size_t i = 0; i < names_.size(); ++i) {
    const PerRoute& r = routes_[i];
    std::uint64_t count = r.count.load(std::memory_order_relaxed);
    if (count == 0) continue;
    std::uint64_t cumulative = 0;
    for (std::size_t b = 0; b <= kBuckets.size(); ++b) {
      cumulative += r.buckets[b].load(std::memory_order_relaxed);
      std::string le = b < kBuckets.size() ? fmt::format("{}", kBuckets[b]) : "+Inf";
      w.sample("dedupd_http_request_duration_seconds_bucket", fmt::format("route=\"{}\",le=\"{}\"", names_[i], le),
               cumulative);
    }
    std::string label = fmt::format("route=\"{}\"", names_[i]);
    w.sample("dedupd_http_request_duration_seconds_sum", label, double(r.sum_ns.load(std::memory_order_relaxed)) / 1e9);
    w.sample("dedupd_http_request_duration_seconds_count", label, count);
  }

  w.family("dedupd_chunk_lookups_total", "counter", "Chunk hashes looked up (single and batch).");
  w.sample("dedupd_chunk_lookups_total", "", lookups_.load(std::memory_order_relaxed));
  w.family("dedupd_chunk_lookups_found_total", "counter", "Chunk hashes that had a location.");
  w.sample("dedupd_chunk_lookups_found_total", "", lookups_found_.load(std::memory_order_relaxed));
  w.family("dedupd_global_dedup_replies_total", "counter", "Global-dedup queries, by outcome.");
  w.sample("dedupd_global_dedup_replies_total", "result=\"hit\"", dedup_hits_.load(std::memory_order_relaxed));
  w.sample("dedupd_global_dedup_replies_total", "result=\"miss\"", dedup_misses_.load(std::memory_order_relaxed));
  w.family("dedupd_xet_endpoint_queries_total", "counter",
           "Global-dedup queries the local Xet endpoint passed to dedupd: answered here, or sent upstream by it.");
  w.sample("dedupd_xet_endpoint_queries_total", "answered=\"local\"", endpoint_local_.load(std::memory_order_relaxed));
  w.sample("dedupd_xet_endpoint_queries_total", "answered=\"forwarded\"",
           endpoint_forwarded_.load(std::memory_order_relaxed));

  // The usual "info" gauge: always 1, its labels are the point (which
  // version runs where, joined onto other series with `* on(instance)`).
  w.family("dedupd_build_info", "gauge", "The dedupd that answers: 1, with its version as a label.");
  w.sample("dedupd_build_info", "version=\"" DEDUPD_VERSION "\"", std::uint64_t(1));
  const ProcessNumbers p = read_process_numbers();
  auto process = [&](std::string_view name, std::string_view type, std::string_view help, auto value) {
    if (!value) return;
    w.family(name, type, help);
    w.sample(name, "", *value);
  };
  process("process_cpu_seconds_total", "counter", "User and system CPU time the process spent, in seconds.",
          p.cpu_seconds);
  process("process_virtual_memory_bytes", "gauge", "Virtual memory size (the LMDB map counts in full).",
          p.virtual_bytes);
  process("process_resident_memory_bytes", "gauge", "Resident memory (mapped index pages read lately count).",
          p.resident_bytes);
  process("process_open_fds", "gauge", "Open file descriptors (one per client connection among them).", p.open_fds);
  process("process_max_fds", "gauge", "The soft limit on open file descriptors.", p.max_fds);
  process("process_start_time_seconds", "gauge", "Unix time the process started.", process_start_);
}

}  // namespace dedupd::daemon::api::http
