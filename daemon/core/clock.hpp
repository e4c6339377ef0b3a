// Wall-clock time in unix units. Everything time-related in the daemon goes
// through system_clock (clock_gettime(CLOCK_REALTIME)), which libfaketime
// intercepts, so tests can run the daemon at any date.
#pragma once

#include <chrono>
#include <cstdint>

namespace dedupd::daemon::core {

inline std::uint64_t unix_now() {
  auto s = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
  return s.count() < 0 ? 0 : std::uint64_t(s.count());
}

inline std::uint64_t unix_now_ms() {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch());
  return ms.count() < 0 ? 0 : std::uint64_t(ms.count());
}

}  // namespace dedupd::daemon::core
