#include "daemon/xetcache/probes.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>

#include "xetcache/shards.hpp"

namespace dedupd::daemon::xetcache {

namespace {

class SystemClock final : public StewardClock {
 public:
  std::uint64_t monotonic_s() override {
    timespec ts{};
    ::clock_gettime(CLOCK_BOOTTIME, &ts);
    return std::uint64_t(ts.tv_sec);
  }
  std::uint64_t wall_s() override { return std::uint64_t(std::time(nullptr)); }
};

// The kernel's PROC_PID_INIT_INO: the inode of the initial pid namespace.
constexpr ino_t kInitialPidNamespaceInode = 0xEFFFFFFCU;

class SystemProcessTable final : public ProcessTable {
 public:
  std::optional<dedupd::xetcache::BootClock> boot_clock() override {
    std::ifstream stat("/proc/stat");
    std::string key;
    std::int64_t btime = -1;
    while (stat >> key)
      if (key == "btime" && stat >> btime) break;
    const long hz = ::sysconf(_SC_CLK_TCK);
    if (btime < 0 || hz <= 0) return std::nullopt;
    return dedupd::xetcache::BootClock{btime, std::uint64_t(hz)};
  }

  ProcessStart process(pid_t pid) override {
    ProcessStart out;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) {
      // No /proc entry: no such process here. kill(0) tells a hidden /proc
      // (hidepid) from a gone one; EPERM is alive and another user's.
      out.running = ::kill(pid, 0) == 0 || errno == EPERM;
      return out;
    }
    out.running = true;
    const auto close = line.rfind(')');  // the command name may hold spaces
    if (close == std::string::npos || close + 2 > line.size()) return out;
    std::istringstream fields(line.substr(close + 2));
    std::string field;
    // Field 22 is the start in clock ticks after boot; field 3 (the state)
    // is the first after the name. A zombie has ended: it reads nothing.
    for (int i = 3; i <= 22 && fields >> field; ++i) {
      if (i == 3 && field == "Z") {
        out.running = false;
        return out;
      }
      if (i != 22) continue;
      std::uint64_t ticks = 0;
      if (std::from_chars(field.data(), field.data() + field.size(), ticks).ec == std::errc{}) out.start_ticks = ticks;
    }
    return out;
  }

  bool foreign_pid_namespace() override {
    struct stat st {};
    if (::stat("/proc/self/ns/pid", &st) != 0) return true;  // cannot tell: not seeing all is the safe guess
    return st.st_ino != kInitialPidNamespaceInode;
  }
};

class SystemFiles final : public StewardFiles {
 public:
  Listing list_logs(const std::string& dir) override {
    Listing out;
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) {
      out.err = errno;
      return out;
    }
    const int dfd = ::dirfd(d);
    errno = 0;
    while (const dirent* e = ::readdir(d)) {
      struct stat st {};
      if (::fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
      out.entries.push_back({e->d_name, std::uint64_t(st.st_mtim.tv_sec), std::uint64_t(st.st_size)});
      errno = 0;
    }
    if (errno != 0) out.err = errno;
    ::closedir(d);
    return out;
  }

  std::optional<std::string> network_fs(const std::string& path) override {
    struct statfs st {};
    if (::statfs(path.c_str(), &st) != 0) return std::nullopt;
    switch (static_cast<unsigned long>(st.f_type)) {
      case NFS_SUPER_MAGIC:
        return "nfs";
      case SMB_SUPER_MAGIC:
        return "smb";
      case 0xFF534D42UL:
        return "cifs";
      case 0xFE534D42UL:
        return "smb2";
      case CODA_SUPER_MAGIC:
        return "coda";
      case AFS_SUPER_MAGIC:
        return "afs";
      case 0x6B414653UL:
        return "kafs";
      case 0x00C36400UL:
        return "ceph";
      case 0x47504653UL:
        return "gpfs";
      case 0x0BD00BD0UL:
        return "lustre";
      case 0x01161970UL:
        return "gfs2";
      case 0x65735546UL:
        return "fuse";  // sshfs, s3fs, ...: may be shared, cannot tell
      default:
        return std::nullopt;
    }
  }

  base::Result<std::vector<std::uint8_t>> read(const std::string& path) override {
    return dedupd::xetcache::read_regular_file(path);
  }

  base::Result<dedupd::xetcache::WrittenShard> write_shard(const std::string& dir, std::span<const std::uint8_t> bytes,
                                                           mode_t mode, std::int64_t mtime_ns) override {
    return dedupd::xetcache::write_shard_file(dir, bytes, mode, mtime_ns);
  }

  int unlink(const std::string& path) override { return ::unlink(path.c_str()) == 0 ? 0 : errno; }

  bool log_dest_redirected() override {
    const char* dest = std::getenv("HF_XET_LOG_DEST");  // NOLINT(concurrency-mt-unsafe): read, never set
    return dest != nullptr && *dest != '\0';
  }
};

}  // namespace

StewardClock& system_steward_clock() {
  static SystemClock clock;
  return clock;
}

ProcessTable& system_process_table() {
  static SystemProcessTable table;
  return table;
}

StewardFiles& system_steward_files() {
  static SystemFiles files;
  return files;
}

}  // namespace dedupd::daemon::xetcache
