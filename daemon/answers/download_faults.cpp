#include "daemon/answers/download_faults.hpp"

#include <string>

namespace dedupd::daemon::answers {

static_assert(std::size_t(Refusal::off) + 1 == kRefusals);
static_assert(std::size_t(FillFailure::local) + 1 == kFillFailures);

std::string_view fill_failure_name(FillFailure why) {
  switch (why) {
    case FillFailure::check:
      return "check";
    case FillFailure::storage:
      return "storage";
    case FillFailure::local:
      return "local";
  }
  return "local";
}

void DownloadFaults::refused(Refusal why) { refused_[std::size_t(why)].fetch_add(1, std::memory_order_relaxed); }

void DownloadFaults::fill_failed(FillFailure why, std::uint64_t fetched) {
  fill_failed_[std::size_t(why)].fetch_add(1, std::memory_order_relaxed);
  fill_failed_bytes_.fetch_add(fetched, std::memory_order_relaxed);
}

void DownloadFaults::cache_damaged() { cache_damaged_.fetch_add(1, std::memory_order_relaxed); }

core::XetDownloadFaults DownloadFaults::snapshot() const {
  core::XetDownloadFaults out;
  for (std::size_t i = 0; i < kRefusals; ++i)
    out.refused.emplace_back(std::string(refusal_name(Refusal(i))), refused_[i].load(std::memory_order_relaxed));
  for (std::size_t i = 0; i < kFillFailures; ++i)
    out.fill_failed.emplace_back(std::string(fill_failure_name(FillFailure(i))),
                                 fill_failed_[i].load(std::memory_order_relaxed));
  out.fill_failed_bytes = fill_failed_bytes_.load(std::memory_order_relaxed);
  out.cache_damaged = cache_damaged_.load(std::memory_order_relaxed);
  return out;
}

}  // namespace dedupd::daemon::answers
