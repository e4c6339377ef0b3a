#include "daemon/api/render/xet_downloads.hpp"

namespace dedupd::daemon::api::render {

std::optional<double> local_hit_ratio(const core::XetDownloadCounts& n) {
  const std::uint64_t all = n.bytes_local_cache + n.bytes_tier + n.bytes_internet;
  if (all == 0) return std::nullopt;
  return double(n.bytes_local_cache) / double(all);
}

Json xet_downloads_json(const core::XetDownloadStatus& d) {
  const core::XetDownloadCounts& n = d.counts;
  const auto ratio = local_hit_ratio(n);
  Json tier = Json::array();
  for (const auto& h : n.tier)
    tier.push_back({{"host", h.host}, {"up", h.up}, {"answered", h.answered}, {"failed", h.failed}});
  const core::XetDownloadCache& c = d.cache;
  Json cache = nullptr;  // before the first walk
  if (c.walked_at != 0)
    cache = {{"dir", c.dir},
             {"known", c.known},
             {"problem", c.problem},
             {"bytes", c.known ? Json(c.bytes) : Json(nullptr)},
             {"files", c.known ? Json(c.files) : Json(nullptr)},
             {"evictions", c.evictions},
             {"walked_at", c.walked_at}};
  Json refused = Json::object(), fill_failed = Json::object();
  for (const auto& [why, count] : d.faults.refused) refused[why] = count;
  for (const auto& [why, count] : d.faults.fill_failed) fill_failed[why] = count;
  return {{"enabled", d.enabled},
          {"bytes", {{"local_cache", n.bytes_local_cache}, {"tier", n.bytes_tier}, {"internet", n.bytes_internet}}},
          {"requests",
           {{"local_cache", n.requests_local_cache},
            {"tier", n.requests_tier},
            {"internet", n.requests_internet},
            {"refused", n.requests_refused},
            {"failed", n.requests_failed}}},
          {"refused", std::move(refused)},
          {"fill_failed", std::move(fill_failed)},
          {"fill_failed_bytes", d.faults.fill_failed_bytes},
          {"cache_damaged", d.faults.cache_damaged},
          {"hit_ratio", ratio ? Json(*ratio) : Json(nullptr)},
          {"cache", std::move(cache)},
          {"tier", std::move(tier)}};
}

void write_xet_download_metrics(http::PromWriter& w, const core::XetDownloadStatus& d) {
  const core::XetDownloadCounts& n = d.counts;
  w.family("dedupd_xet_downloads_enabled", "gauge", "1 while xet_endpoint.downloads.enabled is on.");
  w.sample("dedupd_xet_downloads_enabled", "", std::uint64_t(d.enabled ? 1 : 0));
  w.family("dedupd_xet_download_bytes_total", "counter",
           "Bytes of xorb ranges the local Xet endpoint sent its clients, by where they came from.");
  w.sample("dedupd_xet_download_bytes_total", "source=\"local_cache\"", n.bytes_local_cache);
  w.sample("dedupd_xet_download_bytes_total", "source=\"tier\"", n.bytes_tier);
  w.sample("dedupd_xet_download_bytes_total", "source=\"internet\"", n.bytes_internet);
  w.family("dedupd_xet_download_requests_total", "counter",
           "Range requests of downloads through the endpoint: served by source, refused (403: the client asks "
           "again), or failed.");
  w.sample("dedupd_xet_download_requests_total", "result=\"local_cache\"", n.requests_local_cache);
  w.sample("dedupd_xet_download_requests_total", "result=\"tier\"", n.requests_tier);
  w.sample("dedupd_xet_download_requests_total", "result=\"internet\"", n.requests_internet);
  w.sample("dedupd_xet_download_requests_total", "result=\"refused\"", n.requests_refused);
  w.sample("dedupd_xet_download_requests_total", "result=\"failed\"", n.requests_failed);
  w.family("dedupd_xet_download_refusals_total", "counter",
           "Range URLs dedupd refused (a 403: the client asks the reconstruction again), by reason.");
  for (const auto& [why, count] : d.faults.refused)
    w.sample("dedupd_xet_download_refusals_total", "reason=\"" + why + "\"", count);
  w.family("dedupd_xet_download_fill_failures_total", "counter",
           "Fills from the CAS's storage that cached nothing (a 502: the client retries), by reason.");
  for (const auto& [why, count] : d.faults.fill_failed)
    w.sample("dedupd_xet_download_fill_failures_total", "reason=\"" + why + "\"", count);
  w.family("dedupd_xet_download_fill_failed_bytes_total", "counter",
           "Bytes the storage sent for fills that failed: fetched and dropped, never served.");
  w.sample("dedupd_xet_download_fill_failed_bytes_total", "", d.faults.fill_failed_bytes);
  w.family("dedupd_xet_download_cache_damaged_total", "counter",
           "Cache files found changed or failing their check at a grant: removed (their object fetched again), "
           "never served.");
  w.sample("dedupd_xet_download_cache_damaged_total", "", d.faults.cache_damaged);
  const core::XetDownloadCache& c = d.cache;
  if (c.known) {
    w.family("dedupd_xet_download_cache_bytes", "gauge", "Disk the endpoint's download cache takes (last walk).");
    w.sample("dedupd_xet_download_cache_bytes", "", c.bytes);
    w.family("dedupd_xet_download_cache_files", "gauge", "Files in the endpoint's download cache (last walk).");
    w.sample("dedupd_xet_download_cache_files", "", c.files);
  }
  if (c.walked_at != 0) {
    w.family("dedupd_xet_download_cache_evictions_total", "counter",
             "Cache files nginx removed (its size bound, or idle), seen gone between two walks.");
    w.sample("dedupd_xet_download_cache_evictions_total", "", c.evictions);
  }
  std::uint64_t up = 0;
  for (const auto& h : n.tier) up += h.up ? 1 : 0;
  w.family("dedupd_xet_download_tier_hosts", "gauge",
           "Hosts of the fleet's cache tier the endpoint asked, by how the last request to each went.");
  w.sample("dedupd_xet_download_tier_hosts", "state=\"up\"", up);
  w.sample("dedupd_xet_download_tier_hosts", "state=\"down\"", std::uint64_t(n.tier.size()) - up);
  // No tier host asked, no series per host: the tier's alert stays quiet.
  if (n.tier.empty()) return;
  w.family("dedupd_xet_download_tier_up", "gauge",
           "1 when the last request nginx sent this cache tier host got an answer.");
  for (const auto& h : n.tier)
    w.sample("dedupd_xet_download_tier_up", "host=\"" + http::prom_label(h.host) + "\"", std::uint64_t(h.up ? 1 : 0));
  w.family("dedupd_xet_download_tier_requests_total", "counter",
           "Requests nginx sent each cache tier host, answered or failed (no answer, or a 5xx).");
  for (const auto& h : n.tier) {
    const std::string host = "host=\"" + http::prom_label(h.host) + "\"";
    w.sample("dedupd_xet_download_tier_requests_total", host + ",result=\"answered\"", h.answered);
    w.sample("dedupd_xet_download_tier_requests_total", host + ",result=\"failed\"", h.failed);
  }
}

}  // namespace dedupd::daemon::api::render
