#include "daemon/xetcache/liveness.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "daemon/log/logging.hpp"

namespace dedupd::daemon::xetcache {

void judge_clients(const std::filesystem::path& root, StewardClock& clock, ProcessTable& processes, StewardFiles& files,
                   ClientSightings& sightings) {
  dedupd::xetcache::LivenessFacts facts;
  sightings.clients.clear();
  const auto listing = files.list_logs((root / "logs").native());
  using Logs = dedupd::xetcache::LivenessFacts::Logs;
  if (listing.err == ENOENT || listing.err == ENOTDIR) facts.logs = Logs::missing;
  else if (listing.err == EACCES || listing.err == EPERM) facts.logs = Logs::denied;
  else if (listing.err != 0) facts.logs = Logs::unreadable;
  if (listing.err != 0) facts.logs_error = std::strerror(listing.err);
  facts.network_fs = files.network_fs(root.native());
  facts.foreign_pid_namespace = processes.foreign_pid_namespace();
  facts.log_dest_redirected = files.log_dest_redirected();
  const auto boot = processes.boot_clock();
  const std::uint64_t wall = clock.wall_s();
  std::map<std::string, std::uint64_t> sighted;
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> marks;
  std::set<std::string> ever_running;
  for (const auto& entry : listing.entries) {
    auto log = dedupd::xetcache::parse_client_log_name(entry.name);
    if (!log) continue;
    ++facts.client_logs;
    marks[entry.name] = {entry.mtime_s, entry.size};
    if (sightings.ever_running.contains(entry.name)) ever_running.insert(entry.name);
    const ProcessStart p = processes.process(log->pid);
    if (!p.running) {
      // An ended client this steward saw running is no mystery; any other
      // log still being written is someone it cannot see.
      if (ever_running.contains(entry.name)) continue;
      auto before = sightings.log_marks.find(entry.name);
      const std::uint64_t age = wall > entry.mtime_s ? wall - entry.mtime_s : entry.mtime_s - wall;
      const bool growing = before != sightings.log_marks.end() ? before->second != marks[entry.name]
                                                               : age <= dedupd::xetcache::kRecentLogSeconds;
      if (growing) ++facts.recent_unmatched_logs;
      continue;
    }
    bool alive = true;  // unless the pid is proven to be another process's
    if (p.start_ticks) {
      auto seen = sightings.sighted.find(entry.name);
      if (seen != sightings.sighted.end()) alive = seen->second == *p.start_ticks;
      else if (boot) alive = dedupd::xetcache::may_be_logged_client(*log, *p.start_ticks, *boot);
      if (alive) sighted[entry.name] = *p.start_ticks;
    }
    if (!alive) continue;
    ++facts.alive_clients;
    ever_running.insert(entry.name);
    sightings.clients.push_back(log->pid);
  }
  sightings.sighted = std::move(sighted);
  sightings.log_marks = std::move(marks);
  sightings.ever_running = std::move(ever_running);
  std::sort(sightings.clients.begin(), sightings.clients.end());
  sightings.clients.erase(std::unique(sightings.clients.begin(), sightings.clients.end()), sightings.clients.end());
  facts.alive_clients = sightings.clients.size();
  auto verdict = dedupd::xetcache::judge_liveness(facts);
  if (verdict.established != sightings.liveness.established || verdict.why != sightings.liveness.why) {
    if (verdict.established) spdlog::info("xet cache {}: {}", root, verdict.why);
    else spdlog::warn("xet cache {}: liveness unknown: {}; originals stay until replaced_grace", root, verdict.why);
  }
  sightings.liveness = std::move(verdict);
}

}  // namespace dedupd::daemon::xetcache
