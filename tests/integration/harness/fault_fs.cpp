#include "harness/fault_fs.hpp"

#include <sys/mount.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "harness/eventually.hpp"
#include "tests/support/text_file.hpp"

namespace dedupd::itest {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string faultfs_binary() { return DEDUPD_FAULTFS; }

namespace {

constexpr long kFuseMagic = 0x65735546;  // FUSE_SUPER_MAGIC

bool is_fuse_mount(const fs::path& p) {
  struct statfs s {};
  return ::statfs(p.c_str(), &s) == 0 && s.f_type == kFuseMagic;
}

}  // namespace

FaultFs::FaultFs(const fs::path& backing, const fs::path& mount_point, const fs::path& work, std::uint64_t size)
    : mount_point_(mount_point), size_file_(work / "faultfs-size") {
  fs::create_directories(backing);
  fs::create_directories(mount_point);
  fs::create_directories(work);
  set_size(size);
  const fs::path log = work / "faultfs.log";
  LaunchOptions o;
  o.program = faultfs_binary();
  o.args = {backing.string(), mount_point.string(), "--size-file", size_file_.string(), "-f"};
  o.log_file = log;
  process_.start(o);
  // Mounted, or the program gone (no /dev/fuse, no permission): it says why.
  if (!eventually([&] { return is_fuse_mount(mount_point_) || !process_.running(); }, 20s))
    failure_ = "not mounted after 20 s";
  else if (!is_fuse_mount(mount_point_)) failure_ = tests::file_text(log);
  if (!failure_.empty() && failure_.find_first_not_of(" \n") == std::string::npos)
    failure_ = "it exited saying nothing";
  if (!failure_.empty())
    failure_ = "faultfs does not mount here (it needs /dev/fuse, and root or fusermount3): " + failure_;
}

void FaultFs::set_size(std::uint64_t bytes) {
  const fs::path next = size_file_.string() + ".new";
  std::ofstream(next) << bytes << '\n';
  fs::rename(next, size_file_);  // whole, never half-written when read
}

std::uint64_t FaultFs::used() const {
  struct statvfs v {};
  if (::statvfs(mount_point_.c_str(), &v) != 0)
    throw std::runtime_error("statvfs " + mount_point_.string() + ": " + std::strerror(errno));
  return std::uint64_t(v.f_blocks - v.f_bfree) * v.f_frsize;
}

void FaultFs::unmount() {
  // SIGTERM: faultfs leaves its loop and unmounts; should it be gone
  // already (a crash), the mount is detached here.
  if (process_.running()) process_.stop(10s);
  if (is_fuse_mount(mount_point_) && ::umount2(mount_point_.c_str(), MNT_DETACH) != 0) {
    // Best effort, and nothing to say when it fails: the mount dies with
    // faultfs anyway. (A bare (void) does not quiet g++'s unused-result.)
    if (std::system(("fusermount3 -uz '" + mount_point_.string() + "' 2>/dev/null").c_str()) != 0) return;
  }
}

}  // namespace dedupd::itest
