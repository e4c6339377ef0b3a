// Where NOTIFY_SOCKET says systemd listens for a service's notifications
// (sd_notify(3)): an AF_UNIX datagram socket at a path, or, when the value
// starts with '@', a name in Linux's abstract namespace (the '@' stands for
// the address's leading NUL byte; systemd uses one in containers and for
// services that cannot see its /run).
#pragma once

#include <sys/socket.h>
#include <sys/un.h>

#include <string>
#include <string_view>

#include "base/result.hpp"

namespace dedupd::daemon::systemd {

struct NotifyAddress {
  sockaddr_un address{};
  socklen_t length = 0;  // of `address`'s bytes that count: an abstract name has no terminator
  std::string shown;     // as NOTIFY_SOCKET spelled it, for messages
};

// An error for an empty value, a relative path, a value that does not fit
// an AF_UNIX address, or one holding a NUL byte.
base::Result<NotifyAddress> notify_address(std::string_view value);

}  // namespace dedupd::daemon::systemd
