// The way out of a damaged index: a mark beside it, then the work loop ends
// and main starts dedupd again in its process (daemon/supervisor/restart),
// and that start moves the index aside and rebuilds it from the shards.
// Damage the scrub finds asks for it at once; an operator's `dedupctl index
// rebuild` a moment after its answer has gone out (the restart stops the
// server).
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "base/result.hpp"
#include "daemon/core/index_health_board.hpp"
#include "daemon/core/status.hpp"
#include "daemon/jobs/job.hpp"

namespace dedupd::daemon::jobs {

// The file that marks an index to be moved aside at the next start.
inline constexpr const char* kDamagedMark = "dedupd-damaged";

class RebuildRestart final : public Job {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr auto kOperatorDelay = std::chrono::milliseconds(300);

  // `index_dir` gets the mark; `stop` ends the work loop.
  RebuildRestart(std::filesystem::path index_dir, core::IndexHealthBoard& health, std::function<void()> stop)
      : index_dir_(std::move(index_dir)), health_(health), stop_(std::move(stop)) {}

  // Marks the index and stops the loop; when the mark cannot be written,
  // dedupd stops instead of starting again.
  void now(const std::string& why);
  // An operator's request: the restart kOperatorDelay from now; what the
  // index's health will be, or daemon.busy when a restart is under way.
  base::Result<core::IndexHealth> soon();
  // The loop ended for a restart: main starts dedupd again.
  bool requested() const { return requested_; }

  const char* name() const override { return "rebuild restart"; }
  std::optional<std::chrono::milliseconds> due_in() override;
  void run() override;

 private:
  const std::filesystem::path index_dir_;
  core::IndexHealthBoard& health_;
  const std::function<void()> stop_;
  bool requested_ = false;
  std::optional<Clock::time_point> due_;
};

}  // namespace dedupd::daemon::jobs
