// The supplementary groups of a process from the kernel's own account of it
// (/proc/<pid>/status, "Groups:"). Both doors that check who may speak ask
// it: the API socket where SO_PEERGROUPS is missing, and the learning socket,
// whose datagrams carry only a pid, a uid and a gid.
#pragma once

#include <sys/types.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace dedupd::daemon::core {

// nullopt when the process is gone or its status has no groups line.
inline std::optional<std::vector<gid_t>> process_groups(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Groups:", 0) != 0) continue;
    std::vector<gid_t> groups;
    std::istringstream words(line.substr(7));
    unsigned long g;
    while (words >> g) groups.push_back(gid_t(g));
    return groups;
  }
  return std::nullopt;
}

}  // namespace dedupd::daemon::core
