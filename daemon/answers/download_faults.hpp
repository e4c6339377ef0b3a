// What dedupd refused or could not fill of the local Xet endpoint's range
// requests (docs/XET-ENDPOINT.md, "Downloads"), counted where it decides:
// its grant and fill answers. nginx's access log counts the requests by
// what the client got (daemon/learn/download_counts.hpp); only dedupd knows
// why a range URL was refused, and which of its fills' bytes were fetched
// from the storage for nothing. Any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>

#include "daemon/answers/download_grants.hpp"
#include "daemon/core/status.hpp"

namespace dedupd::daemon::answers {

// Why a fill answered 502 (the client retries; nothing is cached).
enum class FillFailure : std::uint8_t {
  check,    // the bytes are not what the CAS named (xorb_range_check.hpp)
  storage,  // the storage failed: no answer, an error status, a transfer cut
  local,    // this host: no temporary file, a write to it failed
};
inline constexpr std::size_t kFillFailures = 3;
std::string_view fill_failure_name(FillFailure why);

class DownloadFaults {
 public:
  void refused(Refusal why);
  // `fetched`: the bytes the storage sent for it, dropped.
  void fill_failed(FillFailure why, std::uint64_t fetched);
  // A cache file found damaged at a grant, and removed.
  void cache_damaged();
  core::XetDownloadFaults snapshot() const;

 private:
  std::array<std::atomic<std::uint64_t>, kRefusals> refused_{};
  std::array<std::atomic<std::uint64_t>, kFillFailures> fill_failed_{};
  std::atomic<std::uint64_t> fill_failed_bytes_{0};
  std::atomic<std::uint64_t> cache_damaged_{0};
};

}  // namespace dedupd::daemon::answers
