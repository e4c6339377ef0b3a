#include "daemon/learn/confirm_socket.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "daemon/core/process_groups.hpp"

namespace dedupd::daemon::learn {

namespace {

constexpr const char* kRule = "learn.socket";

base::Error fail(std::string message) { return base::Error{kRule, 0, std::move(message), false}; }

}  // namespace

bool may_confirm(const Sender& s, std::optional<gid_t> endpoint_gid) {
  if (s.uid == 0 || s.uid == geteuid()) return true;
  if (!endpoint_gid) return false;
  if (s.gid == *endpoint_gid) return true;
  const auto groups = core::process_groups(s.pid);
  return groups && std::find(groups->begin(), groups->end(), *endpoint_gid) != groups->end();
}

base::Result<ConfirmSocket> ConfirmSocket::bind(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path)
    return fail("learning socket path \"" + path + "\" is empty or too long for a Unix socket");
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return fail(std::string("socket: ") + std::strerror(errno));
  ConfirmSocket s(fd, path, true);
  int on = 1;
  if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof on) != 0)
    return fail(std::string("SO_PASSCRED: ") + std::strerror(errno));
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) ::unlink(path.c_str());  // a stale one
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
    return fail("binding " + path + ": " + std::strerror(errno));
  // Write for all: who sent what is the kernel's word, checked per datagram.
  if (::chmod(path.c_str(), 0622) != 0) return fail("chmod " + path + ": " + std::strerror(errno));
  return s;
}

base::Result<ConfirmSocket> ConfirmSocket::adopt(int fd) {
  sockaddr_un addr{};
  socklen_t len = sizeof addr;
  std::string path = "(unnamed)";
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0 && len > offsetof(sockaddr_un, sun_path) &&
      addr.sun_path[0] != '\0')
    path.assign(addr.sun_path, strnlen(addr.sun_path, len - offsetof(sockaddr_un, sun_path)));
  ConfirmSocket s(fd, path, false);
  // The unit says PassCredentials=yes; set here too, so that an override
  // without it cannot make every report a stranger's.
  int on = 1;
  if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof on) != 0)
    return fail(std::string("SO_PASSCRED on the learning socket systemd passed: ") + std::strerror(errno));
  int flags = fcntl(fd, F_GETFD);
  if (flags < 0 || fcntl(fd, F_SETFD, flags | FD_CLOEXEC) != 0)
    return fail(std::string("the learning socket systemd passed: ") + std::strerror(errno));
  return s;
}

ConfirmSocket::~ConfirmSocket() {
  if (fd_ < 0) return;
  ::close(fd_);
  if (owned_) ::unlink(path_.c_str());
}

ConfirmSocket::Received ConfirmSocket::receive(std::optional<gid_t> endpoint_gid) {
  Received out;
  for (;;) {
    char buf[2048];  // nginx's syslog lines are shorter (NGX_SYSLOG_MAX_STR)
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
    iovec iov{buf, sizeof buf};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t n = ::recvmsg(fd_, &msg, MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;  // EAGAIN: all read
    }
    std::optional<Sender> sender;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
        ucred cred;
        std::memcpy(&cred, CMSG_DATA(c), sizeof cred);
        sender = Sender{cred.pid, cred.uid, cred.gid};
      }
    if (!sender || !may_confirm(*sender, endpoint_gid)) {
      ++out.refused_senders;
      continue;
    }
    const std::string_view datagram(buf, std::size_t(n));
    if (auto d = parse_download_report(datagram)) {
      out.downloads.push_back(std::move(*d));
      continue;
    }
    auto c = parse_confirmation(datagram);
    if (!c) {
      ++out.unreadable;
      continue;
    }
    out.believed.push_back(std::move(*c));
  }
  return out;
}

}  // namespace dedupd::daemon::learn
