// Logs the index's rare events (map growth, dead readers cleared at open,
// a failed merge, an upgrade's progress), which an operator wants to see in
// the journal, and wakes the fleet publisher when a commit queued outbox
// entries.
#pragma once

#include <spdlog/spdlog.h>

#include <chrono>
#include <string>

#include "daemon/fleet_link/wake_fd.hpp"
#include "daemon/log/logging.hpp"
#include "daemon/systemd/notify.hpp"
#include "index/observer.hpp"

namespace dedupd::daemon::supervisor {

class IndexLog final : public index::Observer {
 public:
  explicit IndexLog(fleet_link::WakeFd& outbox_wake) : outbox_wake_(outbox_wake) {}
  void map_grown(std::uint64_t old_size, std::uint64_t new_size) override {
    spdlog::info("index map grown from {} MiB to {} MiB", old_size >> 20, new_size >> 20);
  }
  void stale_readers_cleared(int count) override {
    spdlog::warn("cleared {} reader slot(s) left by dead processes", count);
  }
  void merge_failed(const base::Error& error) override {
    spdlog::warn("index: merging recent chunk entries failed (retried after the next ingest): {}", error);
  }
  void outbox_queued() override { outbox_wake_.post(); }
  // Before READY on a large index of an older schema: said every few
  // seconds, and each step keeps systemd's start timeout from running out
  // (a killed upgrade goes on at the next start, but need not be killed).
  void upgrade_progress(std::uint64_t done, std::uint64_t total) override {
    systemd::notify_extend_timeout(std::chrono::seconds(60));
    const auto now = std::chrono::steady_clock::now();
    if (now - last_progress_ < std::chrono::seconds(5) && done < total) return;
    last_progress_ = now;
    const std::string what = fmt::format("upgrading the index in place: {} of {} chunk entries rewritten", done, total);
    spdlog::info("{}", what);
    systemd::notify_status(what);
  }

 private:
  fleet_link::WakeFd& outbox_wake_;
  std::chrono::steady_clock::time_point last_progress_{};
};

}  // namespace dedupd::daemon::supervisor
