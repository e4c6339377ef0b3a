// What the benchmarks read about the dedupd they run, from /proc.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace dedupd::bench {

// User+system CPU seconds of a process so far.
inline double cpu_of(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(f)), {});
  auto close = s.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream in(s.substr(close + 2));
  std::string field;
  unsigned long long ut = 0, st = 0;
  for (int i = 3; i <= 15 && in >> field; ++i) {
    if (i == 14) ut = std::stoull(field);
    if (i == 15) st = std::stoull(field);
  }
  return double(ut + st) / double(::sysconf(_SC_CLK_TCK));
}

// Resident anonymous memory, KiB, from /proc/PID/status: the same pages as
// smaps_rollup's Anonymous, but read from counters. smaps_rollup walks the
// page tables of the whole mapped data.mdb under the process's mmap lock,
// milliseconds each time at 10 M entries: sampled often, it would slow down
// the daemon it measures.
inline long rss_anon_of(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("RssAnon:", 0) == 0) return std::atol(line.c_str() + 8);
  return 0;
}

}  // namespace dedupd::bench
