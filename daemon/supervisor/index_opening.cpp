#include "daemon/supervisor/index_opening.hpp"

#include <spdlog/spdlog.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>

#include "daemon/core/clock.hpp"
#include "daemon/core/index_damage.hpp"
#include "daemon/jobs/rebuild_restart.hpp"
#include "daemon/log/logging.hpp"
#include "daemon/supervisor/restart.hpp"
#include "index/file_check.hpp"

namespace dedupd::daemon::supervisor {

namespace fs = std::filesystem;

namespace {

std::string utc_stamp(std::uint64_t t) {
  std::time_t tt = std::time_t(t);
  std::tm tm{};
  ::gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

// Renames the index beside itself; false when it cannot be.
bool move_aside(const fs::path& dir, const std::string& damage, core::IndexHealthBoard& health) {
  const std::uint64_t now = core::unix_now();
  fs::path aside = dir;
  aside += ".damaged-" + utc_stamp(now);
  for (int i = 1; fs::exists(aside); ++i) {
    aside = dir;
    aside += ".damaged-" + utc_stamp(now) + "-" + std::to_string(i);
  }
  std::error_code ec;
  fs::rename(dir, aside, ec);
  if (ec) {
    spdlog::critical("the index in {} is damaged ({}), and it cannot be moved aside to {}: {}", dir, damage, aside,
                     ec.message());
    return false;
  }
  spdlog::critical(
      "the index in {} is damaged: {}. It is kept as {} for an admin, and a new index is rebuilt from the shards of "
      "the watched directories; answers say \"X-Dedupd-Index: rebuilding\" until it is done",
      dir, damage, aside);
  health.update([&](core::IndexHealth& h) {
    h = core::IndexHealth{};
    h.state = "rebuilding";
    h.damage = damage;
    h.moved_to = aside.native();
    h.found_at = now;
  });
  health.set_rebuilding(true);
  return true;
}

}  // namespace

std::unique_ptr<index::Index> open_or_move_aside(const index::Options& options, core::IndexHealthBoard& health) {
  const fs::path dir = options.dir;
  const index::DataFileCheck file = index::check_data_file(options.dir);
  const fs::path mark_path = dir / jobs::kDamagedMark;
  set_damage_mark_path(mark_path.native());
  std::string marked;
  if (std::ifstream mark(mark_path); mark) {
    std::getline(mark, marked);
    if (marked.empty()) marked = "marked as damaged";
  }
  if (!marked.empty()) {
    if (!move_aside(dir, marked, health)) return nullptr;
  } else if (file.verdict == index::DataFileCheck::Verdict::damaged) {
    if (!move_aside(dir, file.problem, health)) return nullptr;
  } else if (!file.problem.empty()) {
    spdlog::warn("{}", file.problem);
  }
  auto opened = index::Index::open(options);
  if (!opened && core::says_damaged(opened.error()) && !health.rebuilding()) {
    if (!move_aside(dir, opened.error().to_string(), health)) return nullptr;
    opened = index::Index::open(options);
  }
  if (!opened) {
    spdlog::critical("cannot open the index in {}: {}", dir, opened.error());
    return nullptr;
  }
  return std::move(opened).value();
}

}  // namespace dedupd::daemon::supervisor
