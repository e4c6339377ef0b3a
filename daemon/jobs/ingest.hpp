// Ingest on the work loop: the queued files, a budget at a time, so
// signals, admin actions and the watchdog are seen between batches; and the
// waiting files, looked at again once a second while any waits.
#pragma once

#include <chrono>

#include "daemon/ingest/ingest_queue.hpp"
#include "daemon/jobs/job.hpp"

namespace dedupd::daemon::jobs {

class IngestJob final : public Job {
 public:
  // How long one step may spend ingesting before the loop looks at its
  // events again.
  static constexpr auto kBudget = std::chrono::milliseconds(200);

  explicit IngestJob(ingest::IngestQueue& queue) : queue_(queue) {}

  const char* name() const override { return "ingest"; }
  std::optional<std::chrono::milliseconds> due_in() override;
  void run() override;

 private:
  ingest::IngestQueue& queue_;
};

}  // namespace dedupd::daemon::jobs
