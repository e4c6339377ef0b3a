// MetricsListener: the opt-in TCP side of the socket's read-only health
// routes, for Prometheus on another machine (config `metrics.listen`,
// docs/OPERATIONS.md, "Monitoring"). It serves GET (and HEAD) of the paths
// it is handed (/metrics and /healthz) and nothing else: 404 for any other
// path, 405 for any other method, 400 for a request with a body.
//
// Each answer is the one the daemon's own socket gives for that path, byte
// for byte, asked over that socket: the request counters and latency
// histograms live in the socket's server, so a page rendered here would
// disagree with it; a scrape that succeeds also shows that the socket
// answers, which is what `up` should mean; and the network reaches nothing
// a local client without rights could not already read.
//
// Nothing here runs on the daemon's work loop. Its own libmicrohttpd daemon
// with a small thread pool asks the socket one request per thread at a
// time, so however many scrapers come, the socket sees at most `threads`
// of them at once; connections are bounded (`max_connections`), a request's
// headers must arrive within `header_timeout` however slowly they trickle,
// and at the limit the connections idle longest make room for newcomers
// (connections.hpp).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"

namespace dedupd::daemon::api::http {

struct MetricsListenerOptions {
  std::string host;                // an IP address; IPv6 without brackets
  std::uint16_t port = 0;          // 0: any free port (tests); port() says which
  std::string socket_path;         // the API socket whose answers it passes on
  std::vector<std::string> paths;  // the paths it serves
  unsigned max_connections = 64;
  // A connection idle this long is closed; also the most a request waits
  // for the socket's answer (then 503), under Prometheus's default scrape
  // timeout (10 s) so a scrape that fails says why.
  std::chrono::milliseconds timeout{5000};
  std::chrono::seconds header_timeout{10};
  unsigned threads = 2;
};

class MetricsListener {
 public:
  explicit MetricsListener(MetricsListenerOptions options);
  ~MetricsListener();  // stops
  MetricsListener(const MetricsListener&) = delete;
  MetricsListener& operator=(const MetricsListener&) = delete;

  // Binds and serves on threads of its own. An error (rule "metrics.listen")
  // says why not: the address in use or not on this machine, IP sockets
  // forbidden (a sandbox), libmicrohttpd refusing.
  struct Started {};
  [[nodiscard]] base::Result<Started> start();
  // Stops accepting; a request waiting for the socket ends at once (503).
  // Idempotent.
  void stop();

  std::uint16_t port() const;   // the bound port, once started
  std::string address() const;  // "127.0.0.1:9953", "[::1]:9953"

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// What a server on a Unix socket answers to GET `path`, on a connection of
// its own, within `timeout`; a body over `max_body` bytes, no answer in
// time, or a readable `cancel_fd` (an eventfd; -1: none) is an error (rule
// "metrics.upstream").
struct UnixAnswer {
  unsigned status = 0;
  std::string content_type;
  std::string body;
};
[[nodiscard]] base::Result<UnixAnswer> get_over_unix(const std::string& socket_path, std::string_view path,
                                                     std::chrono::milliseconds timeout, std::size_t max_body,
                                                     int cancel_fd = -1);

}  // namespace dedupd::daemon::api::http
