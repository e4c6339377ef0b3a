#include "daemon/jobs/watchdog.hpp"

#include "daemon/systemd/notify.hpp"

namespace dedupd::daemon::jobs {

void WatchdogJob::start() {
  interval_ = systemd::watchdog_ping_interval();
  next_ = Clock::now();
}

void WatchdogJob::ping_if_due() {
  if (!interval_) return;
  const auto now = Clock::now();
  if (now < next_) return;
  systemd::notify_watchdog();
  next_ = now + *interval_;
}

std::optional<std::chrono::milliseconds> WatchdogJob::due_in() {
  if (!interval_) return std::nullopt;
  return until(next_, Clock::now());
}

}  // namespace dedupd::daemon::jobs
