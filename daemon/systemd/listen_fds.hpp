// Socket activation: the listening socket systemd passed us, if any.
#pragma once

#include <string>
#include <variant>

namespace dedupd::daemon::systemd {

struct NoActivation {};  // not socket-activated: bind the configured path
struct ActivationError {
  std::string message;
};

// One AF_UNIX stream socket in listening state, or an error when systemd
// passed something else (several fds, a TCP socket, a datagram socket).
std::variant<int, NoActivation, ActivationError> activated_socket();

}  // namespace dedupd::daemon::systemd
