#include "daemon/systemd/notify.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>

#include "daemon/systemd/env_number.hpp"
#include "daemon/systemd/notify_address.hpp"
#include "daemon/systemd/notify_send.hpp"
#include "daemon/systemd/watchdog_env.hpp"

namespace dedupd::daemon::systemd {

namespace {

void send(const std::string& state) {
  // Read at each send, never unset: a reload notifies again, and so does
  // the next dedupd after a restart for a rebuild, in the same process.
  const auto value = env_value("NOTIFY_SOCKET");
  if (!value) return;
  auto address = notify_address(*value);
  auto sent = address ? send_notification(*address, state) : base::Result<std::monostate>(address.error());
  // Once: the watchdog would repeat it every few seconds. systemd itself
  // sees the failure (no READY=1, no ping) and says so in the journal.
  static std::atomic<bool> told{false};
  if (!sent && !told.exchange(true))
    spdlog::warn("cannot notify systemd: {} (later failures are not logged)", sent.error().message);
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
  const auto timeout = watchdog_timeout(env_value("WATCHDOG_USEC"), env_value("WATCHDOG_PID"), ::getpid());
  if (!timeout) {
    spdlog::error("the watchdog is off: {}", timeout.error().message);
    return std::nullopt;
  }
  if (!*timeout) return std::nullopt;
  return **timeout / 2;
}

}  // namespace dedupd::daemon::systemd
