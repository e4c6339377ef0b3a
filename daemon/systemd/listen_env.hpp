// Socket activation's environment (sd_listen_fds(3)): systemd passes the
// sockets of a service's .socket units as descriptors 3, 4, ... and says how
// many in LISTEN_FDS, for the process that LISTEN_PID names.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string_view>

#include "base/result.hpp"

namespace dedupd::daemon::systemd {

inline constexpr int kFirstListenFd = 3;  // SD_LISTEN_FDS_START

// How many descriptors, from kFirstListenFd on, LISTEN_PID and LISTEN_FDS
// pass to the process `self`: 0 when either is unset, or when LISTEN_PID
// names another process (the values were meant for a parent that started
// us without clearing them); an error naming the variable when its value is
// not a number, or a count past what descriptors can be.
base::Result<int> listen_fd_count(std::optional<std::string_view> listen_pid,
                                  std::optional<std::string_view> listen_fds, pid_t self);

// That count for this process, from its environment, which it then clears
// of LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES whatever the outcome, and
// each passed descriptor made close-on-exec: nothing dedupd starts may
// think the sockets are its own. An error also when a descriptor the count
// includes is not open.
base::Result<int> take_listen_fds();

}  // namespace dedupd::daemon::systemd
