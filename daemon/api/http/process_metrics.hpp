// The process's own numbers for /metrics, which Metrics renders under the
// names every Prometheus client library gives them (process_cpu_seconds_
// total, _resident_memory_bytes, _open_fds, _max_fds, _start_time_seconds),
// so the usual dashboards and alerts work on dedupd as on anything else:
// its memory beside index.filter_memory, descriptors beside LimitNOFILE
// (each connection takes one), restarts. Read from /proc and getrusage at
// each scrape; a value that cannot be read is absent rather than 0.
#pragma once

#include <cstdint>
#include <optional>

namespace dedupd::daemon::api::http {

struct ProcessNumbers {
  std::optional<double> cpu_seconds;  // user + system
  std::optional<std::uint64_t> virtual_bytes, resident_bytes;
  std::optional<std::uint64_t> open_fds, max_fds;  // max: the soft limit
};

ProcessNumbers read_process_numbers();

// Unix seconds the process started at (from /proc): read once, it never
// changes.
std::optional<double> process_start_time();

}  // namespace dedupd::daemon::api::http
