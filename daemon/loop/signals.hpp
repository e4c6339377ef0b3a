// SIGTERM, SIGINT and SIGHUP delivered as readable events on the work loop
// (signalfd) instead of asynchronous handlers, so a signal never interrupts
// an index transaction.
#pragma once

#include <vector>

namespace dedupd::daemon::loop {

// Blocks the signals in the calling thread. Call first thing in main, before
// any thread starts, so every thread inherits the mask and only the signalfd
// sees them. Also ignores SIGPIPE (a client closing its socket early) and
// SIGIO (a writer breaking a read lease), and SIGXFSZ (a file-size limit
// then fails the write with EFBIG instead of ending the daemon).
void block_daemon_signals();

class SignalFd {
 public:
  SignalFd();  // for the signals block_daemon_signals() blocked
  ~SignalFd();
  SignalFd(const SignalFd&) = delete;
  SignalFd& operator=(const SignalFd&) = delete;

  int fd() const { return fd_; }
  std::vector<int> read_pending();  // signal numbers, in arrival order

 private:
  int fd_ = -1;
};

}  // namespace dedupd::daemon::loop
