// The endpoint's download reports (daemon/learn/download_report.hpp): the
// access log line nginx sends to the learning socket for each range request,
// and what dedupd counts of it (download_counts.hpp).
//
// Properties beyond "no crash": a parsed report holds statuses nginx can
// write; written back as nginx writes it, it parses to the same report; it
// counts as exactly one request, its bytes under one source when served and
// nowhere else (a body cut short is never served); a tier host it names is
// counted once per try.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "daemon/learn/download_counts.hpp"
#include "daemon/learn/download_report.hpp"

namespace {

using namespace dedupd::daemon::learn;

void check(bool ok) {
  if (!ok) std::abort();
}

std::string written(const DownloadReport& r) {
  std::string addrs, statuses;
  for (std::size_t g = 0; g < r.upstream.size(); ++g) {
    if (g) addrs += " : ", statuses += " : ";
    for (std::size_t i = 0; i < r.upstream[g].size(); ++i) {
      if (i) addrs += ", ", statuses += ", ";
      addrs += r.upstream[g][i].addr;
      statuses += r.upstream[g][i].status ? std::to_string(r.upstream[g][i].status) : "-";
    }
  }
  if (r.upstream.empty()) addrs = statuses = "-";
  return std::string(kDownloadReportTag) + " " + std::to_string(r.status) + " " + std::to_string(r.body_bytes) + " " +
         (r.cache_status.empty() ? "-" : r.cache_status) + " " + (r.proxy_host.empty() ? "-" : r.proxy_host) + " \"" +
         addrs + "\" \"" + statuses + "\" " + (r.content_length ? std::to_string(*r.content_length) : "-");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  auto r = parse_download_report(in);
  if (!r) return 0;
  check(r->status >= 100 && r->status <= 599);
  std::size_t tries = 0;
  for (const auto& group : r->upstream) {
    check(!group.empty());
    for (const auto& t : group) {
      check(!t.addr.empty());
      check(t.status == 0 || (t.status >= 100 && t.status <= 599));
      ++tries;
    }
  }
  auto again = parse_download_report(written(*r));
  check(again && again->status == r->status && again->body_bytes == r->body_bytes &&
        again->cache_status == r->cache_status && again->proxy_host == r->proxy_host &&
        again->upstream == r->upstream && again->content_length == r->content_length);

  const ClassifiedDownload c = classify(*r);
  check(c.tier.size() <= tries);
  DownloadCounts counts;
  counts.count(*r);
  const auto n = counts.snapshot();
  check(n.requests_local_cache + n.requests_tier + n.requests_internet + n.requests_refused + n.requests_failed == 1);
  const std::uint64_t bytes = n.bytes_local_cache + n.bytes_tier + n.bytes_internet;
  check(bytes == (c.result == ClassifiedDownload::Result::served ? r->body_bytes : 0));
  check(r->complete() || c.result != ClassifiedDownload::Result::served);
  std::uint64_t per_host = 0;
  for (const auto& h : n.tier) per_host += h.answered + h.failed;
  std::size_t named = 0;
  for (const auto& t : c.tier) named += !t.host.empty();
  check(per_host == named);
  return 0;
}
