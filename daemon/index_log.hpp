// Logs the index's rare events (map growth, dead readers cleared at open,
// a failed merge), which an operator wants to see in the journal, and wakes
// the fleet publisher when a commit queued outbox entries.
#pragma once

#include <spdlog/spdlog.h>

#include "daemon/fleet/wake_fd.hpp"
#include "daemon/log/logging.hpp"
#include "index/observer.hpp"

namespace dedupd::daemon {

class IndexLog final : public index::Observer {
 public:
  explicit IndexLog(fleet_link::WakeFd& outbox_wake) : outbox_wake_(outbox_wake) {}
  void map_grown(std::uint64_t old_size, std::uint64_t new_size) override {
    spdlog::info("index map grown from {} MiB to {} MiB", old_size >> 20, new_size >> 20);
  }
  void stale_readers_cleared(int count) override {
    spdlog::warn("cleared {} reader slot(s) left by dead processes", count);
  }
  void merge_failed(const shard::Error& error) override {
    spdlog::warn("index: merging recent chunk entries failed (retried after the next ingest): {}", error);
  }
  void outbox_queued() override { outbox_wake_.post(); }

 private:
  fleet_link::WakeFd& outbox_wake_;
};

}  // namespace dedupd::daemon
