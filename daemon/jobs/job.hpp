// One piece of the work loop's work besides its events (Knot's
// events/handlers): ingest, the scrub, expiry, the steward's passes, ...
// A job says how long until its next step is due; the scheduler
// (daemon/supervisor/scheduler.hpp) runs the steps that are due, in its
// order, on the work loop's thread, and the loop sleeps until the earliest
// one or an event. A job keeps its own clock: the wall clock for what is
// set in unix time (an expiry, a rotation; libfaketime moves it in tests),
// the monotonic one for paces and backoffs.
#pragma once

#include <chrono>
#include <optional>

#include "daemon/config/config.hpp"

namespace dedupd::daemon::jobs {

// When a job takes its part of the configuration.
enum class Apply { at_start, on_reload };

class Job {
 public:
  virtual ~Job() = default;

  // For logs and tests.
  virtual const char* name() const = 0;
  // How long until the next step is due: zero when due now, nullopt when
  // nothing is due until something else (an event, another job's step)
  // makes it so. Asked before and after each of the loop's waits.
  virtual std::optional<std::chrono::milliseconds> due_in() = 0;
  // One step, once due_in() said zero.
  virtual void run() = 0;
  // The job's part of the configuration: at start, before the loop runs,
  // and again at each reload.
  virtual void configure(const config::Config& /*config*/, Apply /*when*/) {}
};

// The time from `now` until `at`, never less than zero.
template <class TimePoint>
std::chrono::milliseconds until(TimePoint at, TimePoint now) {
  if (at <= now) return std::chrono::milliseconds(0);
  return std::chrono::ceil<std::chrono::milliseconds>(at - now);
}

}  // namespace dedupd::daemon::jobs
