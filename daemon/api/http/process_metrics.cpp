#include "daemon/api/http/process_metrics.hpp"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <fstream>
#include <sstream>
#include <string>

namespace dedupd::daemon::api::http {

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

ProcessNumbers read_process_numbers() {
  ProcessNumbers n;
  rusage u{};
  if (::getrusage(RUSAGE_SELF, &u) == 0)
    n.cpu_seconds =
        double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    unsigned long long size = 0, resident = 0;
    const bool read = std::fscanf(f, "%llu %llu", &size, &resident) == 2;
    std::fclose(f);
    const auto page = std::uint64_t(::sysconf(_SC_PAGESIZE));
    if (read) {
      n.virtual_bytes = std::uint64_t(size) * page;
      n.resident_bytes = std::uint64_t(resident) * page;
    }
  }
  n.open_fds = open_fds();
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur != RLIM_INFINITY) n.max_fds = std::uint64_t(r.rlim_cur);
  return n;
}

}  // namespace dedupd::daemon::api::http
