// What the benchmarks read about the dedupd they run, from /proc.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>

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

// Calls `sample` every `period` on a thread of its own until stop(): how the
// benchmarks follow a process's peak memory while it works. Declare it after
// what `sample` touches, so that exists before the first call.
class Sampler {
 public:
  Sampler(std::chrono::milliseconds period, std::function<void()> sample)
      : t_([this, period, sample = std::move(sample)] {
          while (on_) {
            sample();
            std::this_thread::sleep_for(period);
          }
        }) {}
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;
  ~Sampler() { stop(); }
  void stop() {
    on_ = false;
    if (t_.joinable()) t_.join();
  }

 private:
  std::atomic<bool> on_{true};
  std::thread t_;
};

}  // namespace dedupd::bench
