// A disk that fills up and gets room back, for a test: faultfs
// (tests/support/faultfs.c), a FUSE passthrough of a scratch directory whose
// size the test sets and changes while dedupd runs on it.
//
// Why FUSE: CI runs in a container, as root, with /dev/fuse. A FUSE mount
// needs that and nothing else the tests do not already have (root, or the
// setuid fusermount3 for anyone else); its size changes without a remount,
// which a tmpfs would need, and without mkfs or a loop device, which an
// image file would need. A test that cannot mount it says so with
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
