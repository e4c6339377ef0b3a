// Expiry on the work loop (daemon/expiry/runner.hpp does the work): a pass
// at the next expiry or end of a file's grace, to the second of the wall
// clock, at least every expiry.check_interval, and at once when something
// asks for one (a shard found expired, a reload, the start). Each pass that
// takes entries out gives the index pages back, where waiting files may fit.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>

#include "daemon/core/counters.hpp"
#include "daemon/expiry/runner.hpp"
#include "daemon/ingest/ingest_queue.hpp"
#include "daemon/jobs/job.hpp"

namespace dedupd::daemon::jobs {

class ExpiryJob final : public Job {
 public:
  // `after_pass` runs after each pass (the service's status goes out).
  ExpiryJob(expiry::Runner& runner, const core::Counters& counters, ingest::IngestQueue& queue,
            std::function<void()> after_pass)
      : runner_(runner), counters_(counters), queue_(queue), after_pass_(std::move(after_pass)) {}

  // A pass at the next step.
  void want_pass() { pass_wanted_ = true; }
  // What is due may have changed (a shard went in or out): looked up again
  // before the loop next waits.
  void reschedule() { reschedule_wanted_ = true; }
  // POST /v1/admin/purge: a pass now, or (dry_run) what one would do.
  base::Result<core::PurgeResult> purge(bool dry_run);

  const char* name() const override { return "expiry"; }
  std::optional<std::chrono::milliseconds> due_in() override;
  void run() override;
  void configure(const config::Config& config, Apply when) override;

 private:
  void schedule();

  expiry::Runner& runner_;
  const core::Counters& counters_;
  ingest::IngestQueue& queue_;
  const std::function<void()> after_pass_;
  std::chrono::seconds check_interval_{300};
  bool pass_wanted_ = false;
  bool reschedule_wanted_ = true;
  std::uint64_t wake_ = 0;  // unix s of the next pass
};

}  // namespace dedupd::daemon::jobs
