#include "daemon/jobs/safety_scan.hpp"

#include "daemon/core/clock.hpp"
#include "daemon/expiry/policy.hpp"

namespace dedupd::daemon::jobs {

std::optional<std::chrono::milliseconds> SafetyScanJob::due_in() {
  return expiry::delay_until(next_, core::unix_now_ms());
}

void SafetyScanJob::run() {
  queue_.add(watcher_.scan());
  next_ = core::unix_now() + std::uint64_t(interval_.count());
}

void SafetyScanJob::configure(const config::Config& config, Apply) {
  interval_ = config.expiry.check_interval;
  next_ = core::unix_now() + std::uint64_t(interval_.count());
}

}  // namespace dedupd::daemon::jobs
