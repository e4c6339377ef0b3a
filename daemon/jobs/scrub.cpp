#include "daemon/jobs/scrub.hpp"

#include <spdlog/spdlog.h>

#include "daemon/core/clock.hpp"
#include "daemon/core/index_damage.hpp"
#include "daemon/core/scrub_pace.hpp"
#include "daemon/log/logging.hpp"

namespace dedupd::daemon::jobs {

std::optional<std::chrono::milliseconds> ScrubJob::due_in() {
  if (!queue_.idle()) return std::nullopt;
  if (!started_) return std::chrono::milliseconds(0);
  if (!next_pass_) return std::nullopt;
  return until(std::max(*next_pass_, next_slice_), Clock::now());
}

void ScrubJob::run() {
  if (!started_) start();
  const auto now = Clock::now();
  if (next_pass_ && now >= *next_pass_ && now >= next_slice_) slice();
}

void ScrubJob::start() {
  started_ = true;
  if (interval_) next_pass_ = Clock::now();
  health_.update([&](core::IndexHealth& h) { h.scrub_enabled = interval_.has_value(); });
}

void ScrubJob::slice() {
  const auto now = Clock::now();
  auto found = index_.scrub(pos_, core::kScrubSliceItems, core::kScrubSliceTime);
  next_slice_ = core::next_scrub_slice(now, Clock::now());
  std::string damage;
  if (!found) {
    damage = found.error().to_string();
    if (!core::says_damaged(found.error())) {
      // Not the index's pages (EIO, memory): said, and tried again next pass.
      spdlog::error("scrub: {}", damage);
      damage.clear();
      pos_.done = true;
    }
  } else if (!found->empty()) {
    damage = "the scrub found " + found->front() +
             (found->size() > 1 ? fmt::format(" (and {} more)", found->size() - 1) : "");
  }
  health_.update([&](core::IndexHealth& h) {
    h.scrub_running = !pos_.done && damage.empty();
    h.scrub_items = pos_.items;
    if (pos_.done || !damage.empty()) {
      h.scrub_passes += damage.empty() ? 1 : 0;
      h.scrub_last_end = core::unix_now();
      h.scrub_last_result = damage.empty() ? "clean" : damage;
    }
  });
  if (!damage.empty()) {
    spdlog::critical("the index is damaged: {}; it is moved aside and rebuilt", damage);
    damaged_(damage);
    return;
  }
  if (pos_.done) {
    spdlog::info("scrub: a pass over {} items found nothing wrong", pos_.items);
    if (interval_) next_pass_ = now + *interval_;
    else next_pass_.reset();
  }
}

void ScrubJob::configure(const config::Config& config, Apply when) {
  const std::optional<std::chrono::seconds> was = interval_;
  interval_ = config.index.scrub_interval;
  if (when == Apply::at_start || !started_ || was == interval_) return;
  next_pass_ = core::next_scrub_pass_after_reload(next_pass_, was, interval_, Clock::now());
  health_.update([&](core::IndexHealth& h) { h.scrub_enabled = interval_.has_value(); });
}

}  // namespace dedupd::daemon::jobs
