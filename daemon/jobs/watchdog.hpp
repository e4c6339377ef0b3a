// systemd's watchdog (WatchdogSec=): WATCHDOG=1 from the work loop at half
// the interval systemd set, so a loop that stops turning is restarted.
// Ingest pings between files too: one large file may hold the loop for
// seconds.
#pragma once

#include <chrono>
#include <optional>

#include "daemon/jobs/job.hpp"

namespace dedupd::daemon::jobs {

class WatchdogJob final : public Job {
 public:
  using Clock = std::chrono::steady_clock;

  // Reads the interval systemd set (none: the job is never due).
  void start();
  void ping_if_due();

  const char* name() const override { return "watchdog"; }
  std::optional<std::chrono::milliseconds> due_in() override;
  void run() override { ping_if_due(); }

 private:
  std::optional<std::chrono::microseconds> interval_;
  Clock::time_point next_;
};

}  // namespace dedupd::daemon::jobs
