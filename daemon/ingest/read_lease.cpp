#include "daemon/ingest/read_lease.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace dedupd::daemon::ingest {

ReadLease::ReadLease(const std::filesystem::path& file) {
  fd_ = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd_ < 0) return;
  if (::fcntl(fd_, F_SETLEASE, F_RDLCK) == 0) {
    state_ = State::held;
  } else {
    // EAGAIN: another open file description has it for writing.
    state_ = errno == EAGAIN ? State::busy : State::unsupported;
    ::close(fd_);
    fd_ = -1;
  }
}

ReadLease::~ReadLease() {
  if (fd_ < 0) return;
  ::fcntl(fd_, F_SETLEASE, F_UNLCK);
  ::close(fd_);
}

}  // namespace dedupd::daemon::ingest
