// Socket activation: the sockets systemd passed us, if any (listen_env.hpp
// says how many, socket_kind.hpp what each is).
#pragma once

#include <string>
#include <variant>

namespace dedupd::daemon::systemd {

struct NoActivation {};  // not socket-activated: bind the configured paths
struct ActivationError {
  std::string message;
};
// dedupd.socket holds both, so that each outlives a restart of dedupd: the
// API's listening stream socket, and the datagram socket the local Xet
// endpoint reports on (nginx keeps sending to the same socket across
// dedupd's restarts, and reports sent meanwhile wait in it).
struct ActivatedSockets {
  int api = -1;    // AF_UNIX stream, listening
  int learn = -1;  // AF_UNIX datagram; -1 when the unit has none
};

// The API socket and at most one learning socket, told apart by their
// type, or an error when systemd passed something else (a TCP socket, two
// of a kind, no stream socket).
std::variant<ActivatedSockets, NoActivation, ActivationError> activated_sockets();

}  // namespace dedupd::daemon::systemd
