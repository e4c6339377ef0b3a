// What the steward's tests put in place of its probes (daemon/xetcache/
// probes.hpp): the clocks, the process table, and the real file layer with
// failures where a test says; and the names the Xet client gives its logs.
#pragma once

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "daemon/xetcache/probes.hpp"
#include "tests/support/temp_dir.hpp"
#include "xetcache/merge.hpp"

namespace dedupd::daemon::xetcache::steward_fakes {

inline constexpr std::uint64_t kWall = 1'750'000'000;
inline constexpr std::int64_t kBoot = std::int64_t(kWall) - 86400;  // booted a day ago
inline constexpr std::uint64_t kHz = 100;

class FakeClock final : public StewardClock {
 public:
  std::uint64_t mono = 5000;
  std::uint64_t wall = kWall;
  std::uint64_t monotonic_s() override { return mono; }
  std::uint64_t wall_s() override { return wall; }
};

class FakeProcesses final : public ProcessTable {
 public:
  std::map<pid_t, ProcessStart> running;
  std::optional<dedupd::xetcache::BootClock> boot = dedupd::xetcache::BootClock{kBoot, kHz};
  bool foreign = false;
  std::optional<dedupd::xetcache::BootClock> boot_clock() override { return boot; }
  ProcessStart process(pid_t pid) override {
    auto it = running.find(pid);
    return it == running.end() ? ProcessStart{} : it->second;
  }
  bool foreign_pid_namespace() override { return foreign; }
};

// dedupd killed (kill -9, power loss) in the middle of a merge: unwinds
// run() past every handler, as nothing of the pass survives a kill.
struct Killed {};

// The real file layer, with failures put in where a test says.
class FakeFiles final : public StewardFiles {
 public:
  // Where a merge's write is killed: after the temporary is written whole
  // but before its rename, or after the rename but before the steward
  // journals the originals.
  enum class Kill : std::uint8_t { never, before_rename, after_rename };
  Kill kill = Kill::never;
  int logs_err = 0;
  std::vector<LogEntry> logs;
  std::optional<std::string> network;
  std::map<std::string, int> read_errno;  // by path
  int write_errno = 0;
  int unlink_errno = 0;
  std::map<std::string, int> unlink_errno_at;  // by path
  int writes = 0;                              // merged files actually written
  std::function<void(const std::string&)> before_read;
  std::set<std::string> growing_logs;  // written to between any two listings

  Listing list_logs(const std::string&) override {
    if (logs_err != 0) return {logs_err, {}};
    for (auto& l : logs)
      if (growing_logs.contains(l.name)) l.size += 100;
    return {0, logs};
  }
  std::optional<std::string> network_fs(const std::string&) override { return network; }
  base::Result<std::vector<std::uint8_t>> read(const std::string& path) override {
    if (before_read) before_read(path);
    if (auto it = read_errno.find(path); it != read_errno.end())
      return base::Error{"file.read", 0, path + ": " + std::strerror(it->second), false};
    return system_steward_files().read(path);
  }
  base::Result<dedupd::xetcache::WrittenShard> write_shard(const std::string& dir, std::span<const std::uint8_t> bytes,
                                                           mode_t mode, std::int64_t mtime_ns) override {
    if (write_errno != 0) return base::Error{"xetcache.write", 0, dir + ": " + std::strerror(write_errno), false};
    if (kill == Kill::before_rename) {
      tests::write_file(dedupd::xetcache::steward_temp_path(dir),
                        std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
      throw Killed{};
    }
    auto w = system_steward_files().write_shard(dir, bytes, mode, mtime_ns);
    if (kill == Kill::after_rename) throw Killed{};
    if (w && !w->existed) ++writes;
    return w;
  }
  int unlink(const std::string& path) override {
    if (auto it = unlink_errno_at.find(path); it != unlink_errno_at.end()) return it->second;
    return unlink_errno != 0 ? unlink_errno : system_steward_files().unlink(path);
  }
  bool log_dest_redirected() override { return false; }
};

inline std::string log_name(std::int64_t started_utc, int offset_minutes, pid_t pid) {
  const std::time_t local = std::time_t(started_utc + offset_minutes * 60);
  std::tm tm{};
  ::gmtime_r(&local, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S", &tm);
  char zone[16];
  std::snprintf(zone, sizeof zone, "%c%02d%02d", offset_minutes < 0 ? '-' : '+', std::abs(offset_minutes) / 60,
                std::abs(offset_minutes) % 60);
  return std::string("xet_") + stamp + "123" + zone + "_" + std::to_string(pid) + ".log";
}

}  // namespace dedupd::daemon::xetcache::steward_fakes
