// What the local Xet endpoint's nginx reports of each range request of a
// download (/xet/o/..., docs/XET-ENDPOINT.md, "Downloads"): its access log
// line for it, sent as a datagram to the learning socket beside the shard
// uploads' reports (report.hpp). Pure parsing: the fuzz target takes this
// file alone.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dedupd::daemon::learn {

// The first word of the report, which the endpoint's log format
// (xet_download in packaging/xet-endpoint/nginx.conf.in) writes.
inline constexpr std::string_view kDownloadReportTag = "xet-download";

// One upstream server nginx asked for the request: $upstream_addr's entry
// and $upstream_status's beside it (0: "-", no status).
struct UpstreamTry {
  std::string addr;
  unsigned status = 0;
  bool operator==(const UpstreamTry&) const = default;
};

struct DownloadReport {
  unsigned status = 0;           // what the client got
  std::uint64_t body_bytes = 0;  // $body_bytes_sent
  std::string cache_status;      // $upstream_cache_status: HIT, MISS, ...; "" for "-"
  std::string proxy_host;        // $proxy_host: the upstream's name; "" for "-"
  // The servers asked, one group per location that went upstream in turn
  // (nginx separates them with " : " after an internal redirect, the
  // servers of one group with ", ").
  std::vector<std::vector<UpstreamTry>> upstream;
  // The Content-Length the client was told ($sent_http_content_length);
  // none when nginx said none, or the report has no such field (an
  // endpoint rendered before it).
  std::optional<std::uint64_t> content_length;
  // Whether the whole body went out: false when it was cut short (an
  // upstream dying in its middle; the client got part of it and asks again).
  bool complete() const { return !content_length || body_bytes >= *content_length; }
};

// `xet-download <status> <body bytes> <cache status> <proxy host>
// "<upstream addr>" "<upstream status>" [<content length> or -]`, in syslog framing or bare;
// nullopt for anything else (a shard upload's report among them).
std::optional<DownloadReport> parse_download_report(std::string_view datagram);

}  // namespace dedupd::daemon::learn
