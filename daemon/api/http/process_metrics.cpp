#include "daemon/api/http/process_metrics.hpp"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "daemon/api/http/metrics.hpp"

namespace dedupd::daemon::http {

namespace {

// Field `n` (1-based, as proc(5) counts them) of /proc/self/stat. The
// command name, field 2, is in parentheses and may hold spaces, so counting
// starts after its closing one.
std::optional<std::string> self_stat_field(int n) {
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  auto close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close + 1));
  std::string field;
  for (int i = 3; i <= n; ++i)
    if (!(rest >> field)) return std::nullopt;
  return field;
}

std::optional<std::uint64_t> boot_time() {
  std::ifstream in("/proc/stat");
  std::string key;
  std::uint64_t value = 0;
  while (in >> key) {
    if (key == "btime" && (in >> value)) return value;
    in.ignore(1 << 20, '\n');
  }
  return std::nullopt;
}

std::optional<std::uint64_t> open_fds() {
  DIR* d = ::opendir("/proc/self/fd");
  if (!d) return std::nullopt;
  std::uint64_t n = 0;
  while (dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') ++n;
  ::closedir(d);
  return n > 0 ? n - 1 : 0;  // not the descriptor opendir itself holds
}

}  // namespace

std::optional<double> process_start_time() {
  auto ticks = self_stat_field(22);  // starttime: clock ticks after boot
  auto boot = boot_time();
  long hz = ::sysconf(_SC_CLK_TCK);
  if (!ticks || !boot || hz <= 0) return std::nullopt;
  try {
    return double(*boot) + double(std::stoull(*ticks)) / double(hz);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void render_process_metrics(PromWriter& w, std::optional<double> start_time) {
  rusage u{};
  if (::getrusage(RUSAGE_SELF, &u) == 0) {
    double cpu = double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
    w.family("process_cpu_seconds_total", "counter", "User and system CPU time the process spent, in seconds.");
    w.sample("process_cpu_seconds_total", "", cpu);
  }
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    unsigned long long size = 0, resident = 0;
    const bool read = std::fscanf(f, "%llu %llu", &size, &resident) == 2;
    std::fclose(f);
    const auto page = std::uint64_t(::sysconf(_SC_PAGESIZE));
    if (read) {
      w.family("process_virtual_memory_bytes", "gauge", "Virtual memory size (the LMDB map counts in full).");
      w.sample("process_virtual_memory_bytes", "", std::uint64_t(size) * page);
      w.family("process_resident_memory_bytes", "gauge", "Resident memory (mapped index pages read lately count).");
      w.sample("process_resident_memory_bytes", "", std::uint64_t(resident) * page);
    }
  }
  if (auto n = open_fds()) {
    w.family("process_open_fds", "gauge", "Open file descriptors (one per client connection among them).");
    w.sample("process_open_fds", "", *n);
  }
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur != RLIM_INFINITY) {
    w.family("process_max_fds", "gauge", "The soft limit on open file descriptors.");
    w.sample("process_max_fds", "", std::uint64_t(r.rlim_cur));
  }
  if (start_time) {
    w.family("process_start_time_seconds", "gauge", "Unix time the process started.");
    w.sample("process_start_time_seconds", "", *start_time);
  }
}

}  // namespace dedupd::daemon::http
