#include "daemon/systemd/watchdog_env.hpp"

#include <cstdint>
#include <limits>
#include <string>

#include "daemon/systemd/env_number.hpp"

namespace dedupd::daemon::systemd {

namespace {

base::Error watchdog_env_error(std::string message) {
  return base::Error{"systemd.watchdog", 0, std::move(message), false};
}

}  // namespace

base::Result<std::optional<std::chrono::microseconds>> watchdog_timeout(std::optional<std::string_view> watchdog_usec,
                                                                        std::optional<std::string_view> watchdog_pid,
                                                                        pid_t self) {
  using Timeout = std::optional<std::chrono::microseconds>;
  if (!watchdog_usec) return Timeout();
  // Unset, it means whoever reads WATCHDOG_USEC.
  if (watchdog_pid) {
    const auto pid = env_number(*watchdog_pid, std::uint64_t(std::numeric_limits<pid_t>::max()));
    if (!pid) return watchdog_env_error("WATCHDOG_PID=\"" + std::string(*watchdog_pid) + "\" is not a process id");
    if (pid_t(*pid) != self) return Timeout();
  }
  const auto usec = env_number(*watchdog_usec, std::uint64_t(std::numeric_limits<std::int64_t>::max()));
  if (!usec || *usec == 0)
    return watchdog_env_error("WATCHDOG_USEC=\"" + std::string(*watchdog_usec) +
                              "\" is not a time in microseconds greater than 0");
  return Timeout(std::chrono::microseconds(std::int64_t(*usec)));
}

}  // namespace dedupd::daemon::systemd
