#include "daemon/supervisor/scheduler.hpp"

#include <algorithm>

namespace dedupd::daemon::supervisor {

std::chrono::milliseconds Scheduler::sleep() const {
  std::chrono::milliseconds wait = longest_sleep_;
  for (jobs::Job* job : jobs_) {
    const auto due = job->due_in();
    if (due) wait = std::min(wait, std::max(*due, std::chrono::milliseconds(0)));
    if (wait.count() == 0) break;
  }
  return wait;
}

std::size_t Scheduler::run_due() {
  std::size_t ran = 0;
  for (jobs::Job* job : jobs_) {
    const auto due = job->due_in();
    if (!due || due->count() > 0) continue;
    job->run();
    ++ran;
  }
  return ran;
}

void Scheduler::configure(const config::Config& config, jobs::Apply when) {
  for (jobs::Job* job : jobs_) job->configure(config, when);
}

}  // namespace dedupd::daemon::supervisor
