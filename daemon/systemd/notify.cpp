#include "daemon/systemd/notify.hpp"

#include <systemd/sd-daemon.h>

namespace dedupd::daemon::systemd {

namespace {
void send(const std::string& text) {
  // unset_environment=0: a reload must be able to notify again.
  (void)sd_notify(0, text.c_str());
}
}  // namespace

void notify_ready(const std::string& status) { send("READY=1\nSTATUS=" + status); }
void notify_reloading() { send("RELOADING=1"); }
void notify_stopping() { send("STOPPING=1"); }
void notify_status(const std::string& status) { send("STATUS=" + status); }
void notify_watchdog() { send("WATCHDOG=1"); }
void notify_extend_timeout(std::chrono::microseconds more) {
  send("EXTEND_TIMEOUT_USEC=" + std::to_string(more.count()));
}

std::optional<std::chrono::microseconds> watchdog_ping_interval() {
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) return std::nullopt;
  return std::chrono::microseconds(usec / 2);
}

}  // namespace dedupd::daemon::systemd
