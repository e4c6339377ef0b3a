#include "daemon/fleet_link/kept_filters.hpp"

#include <spdlog/spdlog.h>

#include "daemon/log/logging.hpp"
#include "fleet/key_filters_file.hpp"

namespace dedupd::daemon::fleet_link {

namespace {
double mib(std::uint64_t bytes) { return double(bytes) / (1 << 20); }
}  // namespace

void KeptFilters::load_into(const std::shared_ptr<fleet::KeyFilters>& set) {
  if (file_.empty() || set == set_) return;
  set_ = set;
  const auto started = std::chrono::steady_clock::now();
  auto loaded = fleet::load_kept_filters(*set_, file_);
  written_ = set_->kept_state();
  written_at_ = started;
  if (!loaded) {
    spdlog::warn(
        "fleet: the key filters kept across restarts are not used ({}); they are built from the fleet "
        "database, and the file is written again",
        loaded.error().to_string());
    return;
  }
  if (loaded->filters + loaded->skipped == 0) return;
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  spdlog::info(
      "fleet: {} key filter(s) of {} entries ({:.1f} MiB) read from {} in {:.0f} ms{}; only xorbs "
      "published since are fetched",
      loaded->filters, loaded->entries, mib(loaded->bytes), file_, ms,
      loaded->skipped ? fmt::format(", {} left out (over fleet.key_filter_memory)", loaded->skipped) : "");
}

void KeptFilters::save_if_due(bool stopping, std::chrono::steady_clock::time_point now) {
  if (file_.empty() || !set_) return;
  const auto state = set_->kept_state();
  if (state.version == written_.version) return;
  if (!stopping && state.filters <= written_.filters && now - written_at_ < kSaveEvery) return;
  written_at_ = now;
  auto saved = fleet::save_kept_filters(*set_, file_);
  if (!saved) {
    if (!failed_)
      spdlog::warn(
          "fleet: cannot keep the key filters across restarts ({}); a restart builds them from the fleet "
          "database",
          saved.error().to_string());
    failed_ = true;
    return;
  }
  failed_ = false;
  written_ = state;
  spdlog::debug("fleet: {} key filter(s), {:.1f} MiB, written to {}", saved->filters, mib(saved->bytes), file_);
}

}  // namespace dedupd::daemon::fleet_link
