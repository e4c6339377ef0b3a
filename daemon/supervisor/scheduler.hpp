// The work loop's one dispatcher of jobs (daemon/jobs/job.hpp): after each
// wait, each job that is due runs its step, in the order the jobs were
// added, so a step sees what the steps before it did in the same round (the
// scrub and the steward run only once ingest has emptied its queue). The
// loop then waits for an event, at most until the earliest job is due.
#pragma once

#include <chrono>
#include <vector>

#include "daemon/config/config.hpp"
#include "daemon/jobs/job.hpp"

namespace dedupd::daemon::supervisor {

class Scheduler {
 public:
  // A wait never lasts longer than `longest_sleep`: what changes without an
  // event (free space, a wall clock set anew) is looked at that often.
  explicit Scheduler(std::chrono::milliseconds longest_sleep) : longest_sleep_(longest_sleep) {}

  // `job` outlives the scheduler's use of it.
  void add(jobs::Job& job) { jobs_.push_back(&job); }

  // How long the loop may wait for an event: until the earliest job is
  // due, at most the longest sleep; zero when one is due now.
  std::chrono::milliseconds sleep() const;
  // Runs the step of each job due now, in order; how many ran.
  std::size_t run_due();
  // Each job's part of `config`, in order.
  void configure(const config::Config& config, jobs::Apply when);

 private:
  std::chrono::milliseconds longest_sleep_;
  std::vector<jobs::Job*> jobs_;
};

}  // namespace dedupd::daemon::supervisor
