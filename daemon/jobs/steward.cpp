#include "daemon/jobs/steward.hpp"

#include <filesystem>
#include <vector>

#include "daemon/core/clock.hpp"
#include "daemon/expiry/policy.hpp"

namespace dedupd::daemon::jobs {

std::optional<std::chrono::milliseconds> StewardJob::due_in() {
  // While the last pass is still under way, the loop looks again after its
  // longest sleep.
  if (!steward_.any() || !queue_.idle() || steward_.pass_running()) return std::nullopt;
  return expiry::delay_until(next_pass_, core::unix_now_ms());
}

void StewardJob::run() {
  const std::uint64_t now = core::unix_now();
  if (!steward_.start_pass()) return;  // the last pass is still under way
  next_pass_ = now + std::uint64_t(interval_.count());
}

void StewardJob::configure(const config::Config& config, Apply) {
  std::vector<std::filesystem::path> managed;
  for (const auto& w : config.watch)
    if (w.manage == config::Manage::xet_cache) managed.push_back(std::filesystem::absolute(w.path));
  steward_.configure(std::move(managed), config.xet_cache);
  interval_ = config.xet_cache.interval;
  next_pass_ = 0;
}

}  // namespace dedupd::daemon::jobs
