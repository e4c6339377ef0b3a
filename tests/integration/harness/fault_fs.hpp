// A disk that fills up and gets room back, for a test: faultfs
// (tests/support/faultfs.c), a FUSE passthrough of a scratch directory whose
// size the test sets and changes while dedupd runs on it.
//
// Why FUSE: CI's container (Debian 12 under Docker, as on the developers'
// machine) runs the tests as root with every capability, /dev/fuse and
// /dev/loop*. A tmpfs mounts there too, but only with that privilege, and
// grows only by a remount; a loop image needs mkfs, a free loop device and
// the same privilege. faultfs needs /dev/fuse and a FUSE mount (root, or
// the setuid fusermount3 for any user), and the test changes its size by
// rewriting a file, no remount. A test that cannot mount it says so with
// DEDUPD_CANNOT_RUN (harness/cannot_run.hpp): a failure in CI.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "harness/daemon_process.hpp"

namespace dedupd::itest {

// The faultfs program, set by CMake.
std::string faultfs_binary();

class FaultFs {
 public:
  // Mounts faultfs on `mount_point` (made if missing), its files kept in
  // `backing` (made if missing), `size` bytes; `work` holds the size file
  // and the program's log. Check mounted() before use.
  FaultFs(const std::filesystem::path& backing, const std::filesystem::path& mount_point,
          const std::filesystem::path& work, std::uint64_t size);
  ~FaultFs() { unmount(); }
  FaultFs(const FaultFs&) = delete;
  FaultFs& operator=(const FaultFs&) = delete;

  bool mounted() const { return failure_.empty(); }
  // Why it is not mounted, with the program's own words.
  const std::string& failure() const { return failure_; }
  // A new size, seen at the file system's next statfs or write.
  void set_size(std::uint64_t bytes);
  // Bytes in use, as statvfs says through the mount.
  std::uint64_t used() const;
  // Its files are gone from the mount point after this; the processes that
  // had files open there must be gone first.
  void unmount();

 private:
  std::filesystem::path mount_point_, size_file_;
  std::string failure_;
  DaemonProcess process_;
};

}  // namespace dedupd::itest
