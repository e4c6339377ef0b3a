#include "daemon/jobs/key_rotation.hpp"

#include <spdlog/spdlog.h>

#include "daemon/core/clock.hpp"
#include "daemon/expiry/policy.hpp"
#include "daemon/log/logging.hpp"

namespace dedupd::daemon::jobs {

std::optional<std::chrono::milliseconds> KeyRotationJob::due_in() {
  return expiry::delay_until(keys_.next_rotation(), core::unix_now_ms());
}

void KeyRotationJob::run() {
  if (auto rotated = keys_.rotate_if_due(core::unix_now()); !rotated)
    spdlog::error("global-dedup key rotation (the old key stays): {}", rotated.error());
}

void KeyRotationJob::configure(const config::Config& config, Apply) {
  keys_.set_rotation(config.global_dedup.key_rotation);
}

}  // namespace dedupd::daemon::jobs
