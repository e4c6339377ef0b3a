#include "daemon/loop/signals.hpp"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace dedupd::daemon::loop {

namespace {
sigset_t daemon_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  return set;
}
}  // namespace

void block_daemon_signals() {
  sigset_t set = daemon_signals();
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  // A writer breaking one of our read leases (ingest/read_lease.hpp) sends
  // SIGIO, whose default action would end the daemon; the lease is released
  // when the ingest ends anyway.
  ::signal(SIGIO, SIG_IGN);
  // Past RLIMIT_FSIZE a write fails with EFBIG, which the index reports as
  // a full disk; the default action of SIGXFSZ would end the daemon first.
  ::signal(SIGXFSZ, SIG_IGN);
}

SignalFd::SignalFd() {
  sigset_t set = daemon_signals();
  fd_ = ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "signalfd");
}

SignalFd::~SignalFd() {
  if (fd_ >= 0) ::close(fd_);
}

std::vector<int> SignalFd::read_pending() {
  std::vector<int> out;
  signalfd_siginfo info;
  while (::read(fd_, &info, sizeof info) == ssize_t(sizeof info)) out.push_back(int(info.ssi_signo));
  return out;
}

}  // namespace dedupd::daemon::loop
