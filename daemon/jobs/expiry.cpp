#include "daemon/jobs/expiry.hpp"

#include <spdlog/spdlog.h>

#include <exception>

#include "daemon/core/clock.hpp"
#include "daemon/expiry/policy.hpp"
#include "daemon/log/logging.hpp"

namespace dedupd::daemon::jobs {

std::optional<std::chrono::milliseconds> ExpiryJob::due_in() {
  if (pass_wanted_) return std::chrono::milliseconds(0);
  if (reschedule_wanted_) schedule();
  return expiry::delay_until(wake_, core::unix_now_ms());
}

void ExpiryJob::run() {
  pass_wanted_ = false;
  const std::uint64_t expired_before = counters_.shards_expired;
  if (auto r = runner_.run(core::unix_now(), false); !r) spdlog::error("expiry: {}", r.error());
  // Expiry gave pages back to the index: waiting files may fit in them.
  if (counters_.shards_expired != expired_before) queue_.space_freed(std::chrono::steady_clock::now());
  schedule();
  after_pass_();
}

base::Result<core::PurgeResult> ExpiryJob::purge(bool dry_run) {
  auto r = runner_.run(core::unix_now(), dry_run);
  if (!dry_run) schedule();
  if (!r) {
    base::Error e = r.error();
    e.message = "purge: " + e.message;
    return e;
  }
  return std::move(r).value();
}

void ExpiryJob::configure(const config::Config& config, Apply when) {
  runner_.set_config(config.expiry);
  check_interval_ = config.expiry.check_interval;
  // A shorter grace or a cap may make files due now.
  if (when == Apply::on_reload) pass_wanted_ = true;
}

// The next pass: the next expiry or deletion, no later than one
// check_interval from now.
void ExpiryJob::schedule() {
  reschedule_wanted_ = false;
  const std::uint64_t now = core::unix_now();
  std::optional<std::uint64_t> due;
  try {
    due = runner_.next_due(now);
  } catch (const std::exception& e) {
    spdlog::error("expiry: {}", e.what());
  }
  wake_ = expiry::next_wake(now, {due}, check_interval_);
}

}  // namespace dedupd::daemon::jobs
