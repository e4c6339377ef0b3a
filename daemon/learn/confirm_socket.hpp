// The learning socket: where the local Xet endpoint's nginx reports the
// status the CAS gave each shard upload (its access log sent as syslog
// datagrams to a Unix socket: "<request id> <status>"), and each range
// request of a download ("xet-download ...", download_report.hpp). Anyone may write to
// the socket file; only the endpoint is believed: the kernel says who sent
// each datagram (SCM_CREDENTIALS), and a sender that is not root, not
// dedupd's own user and not in the endpoint's group is ignored and counted.
// Under systemd the socket is dedupd.socket's (adopt): it outlives dedupd's
// restarts, so the endpoint's nginx, which connects once, keeps reaching it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "daemon/learn/download_report.hpp"
#include "daemon/learn/report.hpp"

namespace dedupd::daemon::learn {

struct Sender {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};
// Root, dedupd's own user, or a process whose primary or supplementary
// groups (/proc/<pid>/status) hold `endpoint_gid`. The packaged endpoint
// runs with the endpoint's group as its primary one, which the credentials
// carry: dedupd's unit hides other users' /proc entries (ProtectProc=).
bool may_confirm(const Sender& s, std::optional<gid_t> endpoint_gid);

class ConfirmSocket {
 public:
  // Binds a datagram socket at `path` (a stale socket file there is
  // replaced), writable by anyone: the credentials decide.
  static base::Result<ConfirmSocket> bind(const std::string& path);
  // Takes a datagram socket systemd passed: never unlinked here, the socket
  // unit owns it.
  static base::Result<ConfirmSocket> adopt(int fd);
  ConfirmSocket(ConfirmSocket&& o) noexcept : fd_(o.fd_), path_(std::move(o.path_)), owned_(o.owned_) { o.fd_ = -1; }
  ConfirmSocket& operator=(ConfirmSocket&&) = delete;
  ConfirmSocket(const ConfirmSocket&) = delete;
  ~ConfirmSocket();
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  bool from_systemd() const { return !owned_; }

  struct Received {
    std::vector<Confirmation> believed;
    std::vector<DownloadReport> downloads;  // the range requests of downloads
    std::uint64_t refused_senders = 0;      // datagrams from someone else
    std::uint64_t unreadable = 0;           // datagrams that are no confirmation
  };
  // Every datagram waiting now (non-blocking).
  Received receive(std::optional<gid_t> endpoint_gid);

 private:
  ConfirmSocket(int fd, std::string path, bool owned) : fd_(fd), path_(std::move(path)), owned_(owned) {}
  int fd_ = -1;
  std::string path_;
  bool owned_ = true;  // bound here: the file goes with the socket
};

}  // namespace dedupd::daemon::learn
