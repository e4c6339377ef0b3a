// Who is on the other end of a Unix socket, and may they use admin routes.
// The socket file's mode is the first gate (anyone who can connect may
// read); admin actions also need uid 0 or membership in the admin group.
#pragma once

#include <sys/types.h>

#include <optional>
#include <vector>

namespace dedupd::daemon::api::http {

struct PeerCred {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;              // primary group at connect time
  std::vector<gid_t> groups;  // supplementary groups (may be empty)
};

// SO_PEERCRED of a connected AF_UNIX socket, plus the supplementary groups:
// SO_PEERGROUPS when the kernel has it (captured at connect, so no race
// with the peer exiting), else the "Groups:" line of /proc/<pid>/status.
// nullopt when the fd is not a Unix socket peer.
std::optional<PeerCred> peer_of(int fd);

// uid 0 always; otherwise the admin gid must be the peer's primary or one
// of its supplementary groups. Without an admin gid only root may.
bool is_admin(const PeerCred& peer, std::optional<gid_t> admin_gid);

}  // namespace dedupd::daemon::api::http
