#include "daemon/jobs/systemd_status.hpp"

#include <fmt/format.h>

#include "daemon/systemd/notify.hpp"

namespace dedupd::daemon::jobs {

std::string SystemdStatusJob::line() const {
  std::string s;
  // counts(), not stats(): this goes out with READY=1 and every few
  // seconds after, and stats() walks the freelist, cold after a restart.
  if (auto st = index_.counts(); st) {
    s = fmt::format("{} live shards, {} chunk entries, {} xorbs; {} expired, {} rejected", st->shards_live,
                    st->chunk_entries, st->xorbs, st->shards_expired, st->rejected);
  }
  if (!queue_.idle()) s += fmt::format("; {} files queued", queue_.queued());
  if (queue_.waiting() != 0)
    s += fmt::format("; {} files waiting{}", queue_.waiting(), queue_.out_of_space() ? " (disk full)" : "");
  return s;
}

void SystemdStatusJob::publish(bool force) {
  const auto now = Clock::now();
  if (!force && now < next_) return;
  next_ = now + kEvery;
  std::string s = line();
  if (s == last_) return;
  last_ = std::move(s);
  systemd::notify_status(last_);
}

}  // namespace dedupd::daemon::jobs
