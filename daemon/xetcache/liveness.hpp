// Which Xet clients are alive under a managed root, as the probes show them
// and remembered from pass to pass; the verdict itself is the pure
// xetcache::judge_liveness.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "daemon/xetcache/probes.hpp"
#include "xetcache/rules.hpp"

namespace dedupd::daemon::xetcache {

struct ClientSightings {
  dedupd::xetcache::LivenessVerdict liveness;
  std::vector<std::int64_t> clients;
  // Log name -> the start ticks of the process first seen running under
  // its pid: the same ticks later are the same process whatever the wall
  // clock did since; other ticks are a reused pid.
  std::map<std::string, std::uint64_t> sighted;
  std::set<std::string> ever_running;  // log names whose pid this steward saw as the client
  // Log name -> (mtime, size) at the last pass: a log of a pid not running
  // here that still grows is a client this steward cannot see.
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> log_marks;
};

// Reads the client logs of `root` and the process table, and brings
// `sightings` up to date (a change of verdict is logged).
void judge_clients(const std::filesystem::path& root, StewardClock& clock, ProcessTable& processes, StewardFiles& files,
                   ClientSightings& sightings);

}  // namespace dedupd::daemon::xetcache
