// The index's health as the work loop finds it (a damaged index moved aside
// and rebuilt, the scrub's passes), where any thread reads it: status, and
// the answers that say the index is being rebuilt. The loop's parts that
// find something (the start, the ingest queue, the scrub) each write their
// own fields; one lock keeps a reader from seeing half of a change.
#pragma once

#include <atomic>
#include <mutex>

#include "daemon/core/status.hpp"

namespace dedupd::daemon::core {

class IndexHealthBoard {
 public:
  IndexHealth get() const {
    std::lock_guard lock(mu_);
    return health_;
  }
  // Runs `change` on the health under the lock.
  template <class Change>
  void update(Change&& change) {
    std::lock_guard lock(mu_);
    change(health_);
  }

  // Read on every answer: a flag, not the lock.
  bool rebuilding() const { return rebuilding_.load(std::memory_order_relaxed); }
  void set_rebuilding(bool on) { rebuilding_ = on; }

 private:
  mutable std::mutex mu_;
  IndexHealth health_;
  std::atomic<bool> rebuilding_{false};
};

}  // namespace dedupd::daemon::core
