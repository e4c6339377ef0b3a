#include "daemon/learn/download_counts.hpp"

namespace dedupd::daemon::learn {

namespace {

bool from_cache(std::string_view cache_status) {
  return cache_status == "HIT" || cache_status == "STALE" || cache_status == "UPDATING" ||
         cache_status == "REVALIDATED";
}

// A tier host answered when it gave a status below 500 (a 403 for a range
// URL it refuses is an answer); no status, or a 5xx, is a failure.
ClassifiedDownload::TierTry tier_try(const UpstreamTry& t) {
  return {t.addr == kTierUpstream ? std::string() : t.addr, t.status != 0 && t.status < 500};
}

}  // namespace

ClassifiedDownload classify(const DownloadReport& report) {
  ClassifiedDownload c;
  const bool last_is_tier = report.proxy_host == kTierUpstream;
  for (std::size_t g = 0; g < report.upstream.size(); ++g)
    if (g + 1 < report.upstream.size() || last_is_tier)
      for (const UpstreamTry& t : report.upstream[g]) c.tier.push_back(tier_try(t));
  if (report.status == 403) c.result = ClassifiedDownload::Result::refused;
  // A body cut short served nothing the client keeps: it asks again.
  else if (report.status >= 400 || !report.complete()) c.result = ClassifiedDownload::Result::failed;
  else {
    c.result = ClassifiedDownload::Result::served;
    c.bytes = report.body_bytes;
    c.source = from_cache(report.cache_status) ? DownloadSource::local_cache
               : last_is_tier                  ? DownloadSource::tier
                                               : DownloadSource::internet;
  }
  return c;
}

void DownloadCounts::count(const DownloadReport& report) {
  const ClassifiedDownload c = classify(report);
  std::lock_guard lock(mu_);
  core::XetDownloadCounts& n = counts_;
  switch (c.result) {
    case ClassifiedDownload::Result::refused:
      ++n.requests_refused;
      break;
    case ClassifiedDownload::Result::failed:
      ++n.requests_failed;
      break;
    case ClassifiedDownload::Result::served:
      switch (c.source) {
        case DownloadSource::local_cache:
          ++n.requests_local_cache, n.bytes_local_cache += c.bytes;
          break;
        case DownloadSource::tier:
          ++n.requests_tier, n.bytes_tier += c.bytes;
          break;
        case DownloadSource::internet:
          ++n.requests_internet, n.bytes_internet += c.bytes;
          break;
      }
      break;
  }
  for (const auto& t : c.tier) {
    if (t.host.empty()) {
      // No live host: nginx holds every one down (none was tried).
      for (auto& [name, h] : tier_) h.up = false;
      continue;
    }
    core::XetTierHost& h = tier_[t.host];
    h.host = t.host;
    h.up = t.answered;
    ++(t.answered ? h.answered : h.failed);
  }
}

core::XetDownloadCounts DownloadCounts::snapshot() const {
  std::lock_guard lock(mu_);
  core::XetDownloadCounts out = counts_;
  for (const auto& [name, h] : tier_) out.tier.push_back(h);
  return out;
}

}  // namespace dedupd::daemon::learn
