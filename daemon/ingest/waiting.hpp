// Files that could not be indexed for a reason that passes (the disk or the
// map full, EIO, a file still open for writing): each kept with its reason
// and retried with backoff, and all of them at once when space comes back.
// Never dropped, never quarantined: the index's trouble is not the file's.
// The work loop owns it; status() may be read from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "daemon/core/status.hpp"
#include "daemon/watch/watcher.hpp"

namespace dedupd::daemon::ingest {

// The reasons of the daemon's own that pass, besides the index's
// (index.no_space, index.map_full, index.io): a watched file still open
// for writing when it was read, and one that could not be read (EIO).
inline constexpr const char* kRuleStillWritten = "daemon.still_written";
inline constexpr const char* kRuleReadIo = "daemon.read_io";

class WaitingFiles {
 public:
  using Clock = std::chrono::steady_clock;
  // The first retry comes after kFirstRetry, each later one after twice
  // the last, up to kMaxRetry: a disk that stays full costs a failed
  // posix_fallocate per file a minute, no more, and a limit lifted without
  // any space freed (RLIMIT_FSIZE, a quota) is noticed within a minute.
  static constexpr std::chrono::seconds kFirstRetry{2};
  static constexpr std::chrono::seconds kMaxRetry{60};

  // `rule` is the error's rule ("index.no_space"), `why` its message.
  void wait(const watch::Candidate& file, const std::string& rule, const std::string& why, std::uint64_t unix_now,
            Clock::time_point now);
  // It went in, or is no longer the index's to take (gone, rejected).
  void settled(const std::string& path);
  // The files whose retry is due, taken out of their wait (they come back
  // with wait() if they fail again, keeping their first reason's time).
  std::vector<watch::Candidate> due(Clock::time_point now);
  // Space came back, or a write went through: every file is due now.
  void all_due_now(Clock::time_point now);

  bool empty() const;
  std::size_t size() const;
  // True while the last failure of some waiting file was the disk or the
  // map being full.
  bool out_of_space() const;
  core::WaitingStatus status(std::uint64_t unix_now, std::size_t max_listed = 20) const;

 private:
  struct Entry {
    watch::Candidate file;
    std::string rule, why;
    std::uint64_t since = 0;  // unix s of the first failure
    std::uint64_t attempts = 0;
    Clock::duration backoff{};
    Clock::time_point next_try;
    bool in_retry = false;  // handed out by due(), not back yet
  };
  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_;
};

// A reason that passes: the file waits. Anything else is the file's fault
// or final, and goes the usual way.
bool is_passing_failure(const std::string& rule);

}  // namespace dedupd::daemon::ingest
