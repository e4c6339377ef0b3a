// systemd's notifications for Type=notify: READY/RELOADING/STOPPING/STATUS,
// and the watchdog (sd_notify(3)'s protocol, spoken by notify_send.hpp, not
// libsystemd). Every call is a no-op when NOTIFY_SOCKET is unset, so the
// same code runs from a terminal.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace dedupd::daemon::systemd {

void notify_ready(const std::string& status);
void notify_reloading();
void notify_stopping();
void notify_status(const std::string& status);
void notify_watchdog();
// Before READY: startup goes on past TimeoutStartSec by `more` from now
// (EXTEND_TIMEOUT_USEC), as long as it keeps saying so.
void notify_extend_timeout(std::chrono::microseconds more);

// How often to ping: half of WATCHDOG_USEC, or nullopt when the watchdog
// is off (or meant for another pid).
std::optional<std::chrono::microseconds> watchdog_ping_interval();

}  // namespace dedupd::daemon::systemd
