#include "cli/write_behind.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dedupctl {

WriteBehind::WriteBehind(int fd) {
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
  const off_t at = ::lseek(fd, 0, SEEK_CUR);
  if (at < 0) return;
  fd_ = fd;
  start_ = started_ = dropped_ = std::uint64_t(at);
}

void WriteBehind::wrote() {
  if (fd_ < 0) return;
  const off_t at = ::lseek(fd_, 0, SEEK_CUR);
  if (at < 0) return;
  const std::uint64_t end = std::uint64_t(at);
  // Whole windows only: a partly written page would be dirtied again.
  while (started_ + kWindowBytes <= end) {
    if (::sync_file_range(fd_, off_t(started_), off_t(kWindowBytes), SYNC_FILE_RANGE_WRITE) != 0) {
      fd_ = -1;  // not supported here: leave the file to the page cache
      return;
    }
    started_ += kWindowBytes;
  }
  // The window before the newest: on disk by now, or waited for here (the
  // disk, not the client, sets the pace of an answer this large anyway).
  while (dropped_ + kWindowBytes < started_ && started_ - start_ > kKeepBytes) {
    const unsigned wait = SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER;
    if (::sync_file_range(fd_, off_t(dropped_), off_t(kWindowBytes), wait) != 0 ||
        ::posix_fadvise(fd_, off_t(dropped_), off_t(kWindowBytes), POSIX_FADV_DONTNEED) != 0) {
      fd_ = -1;
      return;
    }
    dropped_ += kWindowBytes;
  }
}

}  // namespace dedupctl
