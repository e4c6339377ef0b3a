// What the cache steward asks of the world, behind small interfaces: the
// clocks, the process table and the file system. The real ones read /proc,
// the client's logs and the kernel; tests put fakes in their place to step a
// clock, start or end a client, or fail a write with ENOSPC. The decisions
// themselves are pure (xetcache/rules.hpp).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "xetcache/merge.hpp"
#include "xetcache/rules.hpp"

namespace dedupd::daemon::xetcache {

class StewardClock {
 public:
  virtual ~StewardClock() = default;
  // Seconds that only go forward (CLOCK_BOOTTIME: suspend counts, a step of
  // the wall clock does not). Every wait is measured on it.
  virtual std::uint64_t monotonic_s() = 0;
  // Unix seconds, only for what is itself wall time: shard expiries, and
  // how old a log file's mtime is.
  virtual std::uint64_t wall_s() = 0;
};

struct ProcessStart {
  bool running = false;
  std::optional<std::uint64_t> start_ticks;  // since boot; nullopt when /proc/<pid>/stat could not be read
};

class ProcessTable {
 public:
  virtual ~ProcessTable() = default;
  // Read again at every pass: btime follows steps of the wall clock, which
  // the log names were written in.
  virtual std::optional<dedupd::xetcache::BootClock> boot_clock() = 0;
  virtual ProcessStart process(pid_t pid) = 0;
  // dedupd sees only part of the pids (it runs in a pid namespace other
  // than the initial one).
  virtual bool foreign_pid_namespace() = 0;
};

struct LogEntry {
  std::string name;
  std::uint64_t mtime_s = 0;
  std::uint64_t size = 0;
};

class StewardFiles {
 public:
  virtual ~StewardFiles() = default;
  // The names in `dir` with their mtimes; `err` is the errno (ENOENT,
  // EACCES, ...) when it cannot be listed.
  struct Listing {
    int err = 0;
    std::vector<LogEntry> entries;
  };
  virtual Listing list_logs(const std::string& dir) = 0;
  // The file system type's name when `path` is on a network file system.
  virtual std::optional<std::string> network_fs(const std::string& path) = 0;
  // xetcache::read_regular_file.
  virtual base::Result<std::vector<std::uint8_t>> read(const std::string& path) = 0;
  // xetcache::write_shard_file.
  virtual base::Result<dedupd::xetcache::WrittenShard> write_shard(const std::string& dir,
                                                                   std::span<const std::uint8_t> bytes, mode_t mode,
                                                                   std::int64_t mtime_ns) = 0;
  // 0, or the errno of unlink(2).
  virtual int unlink(const std::string& path) = 0;
  // True when HF_XET_LOG_DEST is set where dedupd runs: clients started
  // from the same environment log elsewhere.
  virtual bool log_dest_redirected() = 0;
};

// The real ones. One instance each serves every steward.
StewardClock& system_steward_clock();
ProcessTable& system_process_table();
StewardFiles& system_steward_files();

}  // namespace dedupd::daemon::xetcache
