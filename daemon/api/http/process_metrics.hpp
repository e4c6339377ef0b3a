// The process's own numbers for /metrics under the names every Prometheus
// client library gives them (process_cpu_seconds_total, _resident_memory_
// bytes, _open_fds, _max_fds, _start_time_seconds), so the usual dashboards
// and alerts work on dedupd as on anything else: its memory beside
// index.filter_memory, descriptors beside LimitNOFILE (each connection takes
// one), restarts. Read from /proc and getrusage at each scrape; a value that
// cannot be read is left out rather than shown as 0.
#pragma once

#include <cstdint>
#include <optional>

namespace dedupd::daemon::http {

class PromWriter;

// Unix seconds the process started at (from /proc), read once.
std::optional<double> process_start_time();

void render_process_metrics(PromWriter& w, std::optional<double> start_time);

}  // namespace dedupd::daemon::http
