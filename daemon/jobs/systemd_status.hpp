// The one line systemd shows for the service (STATUS=): the index's counts
// and what waits to go in. Sent with READY=1, after each expiry pass, and
// at most every kEvery while it changes.
#pragma once

#include <chrono>
#include <string>

#include "daemon/ingest/ingest_queue.hpp"
#include "daemon/jobs/job.hpp"
#include "index/index.hpp"

namespace dedupd::daemon::jobs {

class SystemdStatusJob final : public Job {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr auto kEvery = std::chrono::seconds(2);

  SystemdStatusJob(const index::Index& index, const ingest::IngestQueue& queue) : index_(index), queue_(queue) {}

  std::string line() const;
  // Sends the line when it changed; `force`: whenever it is, not only
  // kEvery after the last.
  void publish(bool force);

  const char* name() const override { return "systemd status"; }
  std::optional<std::chrono::milliseconds> due_in() override { return until(next_, Clock::now()); }
  void run() override { publish(false); }

 private:
  const index::Index& index_;
  const ingest::IngestQueue& queue_;
  Clock::time_point next_;
  std::string last_;
};

}  // namespace dedupd::daemon::jobs
