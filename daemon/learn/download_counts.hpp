// The endpoint's download reports (download_report.hpp) counted: bytes by
// where they came from, requests by what became of them, and the fleet's
// cache tier host by host. Counted on the work loop, read by status and
// /metrics from any thread.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "daemon/core/status.hpp"
#include "daemon/learn/download_report.hpp"

namespace dedupd::daemon::learn {

// The name of the endpoint's upstream block for the fleet's cache tier
// (docs/XET-ENDPOINT.md, "Fleet"): a request whose last upstream was it
// came from the tier; nginx also writes this name as the address when no
// host of it was live.
inline constexpr std::string_view kTierUpstream = "xet_tier";

enum class DownloadSource { local_cache, tier, internet };

// What one report says: the request's outcome, and each try of a tier
// host (a host "" when nginx found none of them live).
struct ClassifiedDownload {
  enum class Result { served, refused, failed } result = Result::failed;
  DownloadSource source = DownloadSource::internet;  // when served
  std::uint64_t bytes = 0;                           // when served
  struct TierTry {
    std::string host;
    bool answered = false;
  };
  std::vector<TierTry> tier;
};

// A hit (HIT, and STALE, UPDATING, REVALIDATED: bytes of the cache) is the
// local cache; else the tier when the last upstream was the tier's block,
// else the internet. The upstream groups before the last are tiers too: the
// download location's one internal redirect is from a failed tier to a
// fill of its own.
ClassifiedDownload classify(const DownloadReport& report);

class DownloadCounts {
 public:
  void count(const DownloadReport& report);
  core::XetDownloadCounts snapshot() const;

 private:
  mutable std::mutex mu_;
  core::XetDownloadCounts counts_;                 // without tier
  std::map<std::string, core::XetTierHost> tier_;  // by host
};

}  // namespace dedupd::daemon::learn
