// The watchdog's environment (sd_watchdog_enabled(3)): with WatchdogSec=
// set, systemd tells a service in WATCHDOG_USEC how long it waits for each
// WATCHDOG=1, and in WATCHDOG_PID which process it expects them from.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string_view>

#include "base/result.hpp"

namespace dedupd::daemon::systemd {

// How long systemd waits for a ping from the process `self`: nullopt when
// WATCHDOG_USEC is unset or WATCHDOG_PID names another process (they were
// meant for a parent); an error naming the variable when its value is not
// a number, or the time is 0.
base::Result<std::optional<std::chrono::microseconds>> watchdog_timeout(std::optional<std::string_view> watchdog_usec,
                                                                        std::optional<std::string_view> watchdog_pid,
                                                                        pid_t self);

}  // namespace dedupd::daemon::systemd
