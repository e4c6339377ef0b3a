// Where dedupd listens and who may speak there: the sockets systemd passed
// (dedupd.socket), else the configured paths; the groups that may use the
// admin routes and teach the local Xet endpoint's shards.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "daemon/config/config.hpp"
#include "daemon/learn/learner.hpp"

namespace dedupd::daemon::supervisor {

std::optional<gid_t> admin_gid_of(const std::optional<std::string>& group);
// Unset, the group the package gives its endpoint (sysusers.d), where the
// system has it: nothing to configure for the packaged endpoint.
std::optional<gid_t> endpoint_gid_of(const config::XetEndpointConfig& endpoint);

// Where the endpoint's nginx reports the CAS's statuses, when dedupd binds
// it itself (not under systemd); "" without an endpoint configured: then
// nothing is learned.
std::string learn_socket_of(const config::Config& config);

// Takes the sockets systemd passed, before anything listens: the learner
// adopts the learning socket now, and the API's is returned for the server
// (-1: none passed, the server binds `socket`). Copies of both are kept for
// a restart in place (restart.hpp). nullopt (logged) when systemd passed
// sockets dedupd cannot use.
std::optional<int> take_activated_sockets(learn::Learner& learner);

}  // namespace dedupd::daemon::supervisor
