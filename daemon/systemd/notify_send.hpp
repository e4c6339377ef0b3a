// One notification to systemd (sd_notify(3)): a single datagram holding
// the state lines ("READY=1\nSTATUS=..."), from a socket opened for it
// alone. No credentials are attached: the kernel passes the sender's to a
// receiver that asks (SO_PASSCRED), as systemd's notification socket does.
#pragma once

#include <string_view>
#include <variant>

#include "base/result.hpp"
#include "daemon/systemd/notify_address.hpp"

namespace dedupd::daemon::systemd {

// Waits while the receiver's queue is full, as libsystemd's sd_notify
// does: a READY=1 dropped would be a start that times out.
base::Result<std::monostate> send_notification(const NotifyAddress& to, std::string_view state);

}  // namespace dedupd::daemon::systemd
