#include "daemon/jobs/rebuild_restart.hpp"

#include <spdlog/spdlog.h>

#include <fstream>

#include "daemon/core/errors.hpp"
#include "daemon/log/logging.hpp"

namespace dedupd::daemon::jobs {

void RebuildRestart::now(const std::string& why) {
  const std::filesystem::path mark = index_dir_ / kDamagedMark;
  std::ofstream out(mark, std::ios::trunc);
  out << why << '\n';
  out.close();
  if (!out) {
    spdlog::critical("the index must be rebuilt ({}), but {} cannot be written: stopping instead", why, mark);
  } else {
    requested_ = true;
  }
  health_.set_rebuilding(true);  // answers say so until the restart
  stop_();
}

base::Result<core::IndexHealth> RebuildRestart::soon() {
  if (requested_) return core::seam_error(core::kRuleBusy, "a rebuild is starting already");
  due_ = Clock::now() + kOperatorDelay;
  core::IndexHealth h;
  h.state = "rebuilding";
  h.damage = "asked by an operator";
  spdlog::warn("an operator asked for the index to be rebuilt: dedupd starts again in 300 ms and rebuilds it");
  return h;
}

std::optional<std::chrono::milliseconds> RebuildRestart::due_in() {
  if (!due_) return std::nullopt;
  return until(*due_, Clock::now());
}

void RebuildRestart::run() {
  due_.reset();
  now("asked by an operator (dedupctl index rebuild)");
}

}  // namespace dedupd::daemon::jobs
