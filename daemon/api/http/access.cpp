#include "daemon/api/http/access.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "daemon/core/process_groups.hpp"

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59  // Linux 4.13; older headers lack the name
#endif

namespace dedupd::daemon::api::http {

namespace {

bool peer_groups_sockopt(int fd, std::vector<gid_t>& out) {
  std::vector<gid_t> buf(64);
  for (int attempt = 0; attempt < 2; ++attempt) {
    socklen_t len = socklen_t(buf.size() * sizeof(gid_t));
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, buf.data(), &len) == 0) {
      buf.resize(len / sizeof(gid_t));
      out = std::move(buf);
      return true;
    }
    if (errno != ERANGE) return false;
    // The kernel told us the size it needs.
    buf.resize(len / sizeof(gid_t) + 1);
  }
  return false;
}

}  // namespace

std::optional<PeerCred> peer_of(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof cred) return std::nullopt;
  PeerCred peer{cred.pid, cred.uid, cred.gid, {}};
  if (!peer_groups_sockopt(fd, peer.groups) && cred.pid > 0)
    if (auto groups = core::process_groups(cred.pid)) peer.groups = std::move(*groups);
  return peer;
}

bool is_admin(const PeerCred& peer, std::optional<gid_t> admin_gid) {
  if (peer.uid == 0) return true;
  if (!admin_gid) return false;
  if (peer.gid == *admin_gid) return true;
  return std::find(peer.groups.begin(), peer.groups.end(), *admin_gid) != peer.groups.end();
}

}  // namespace dedupd::daemon::api::http
