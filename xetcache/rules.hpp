// The steward's rules (daemon/xetcache/steward): when a file of a client
// cache may be deleted or evicted, and whether the steward can tell which
// client processes are alive. Pure functions of facts the daemon's probes
// gathered (the process table, the client's logs, the clocks, the file
// system), so every decision can be tested and shown without touching any
// of them. daemon/README.md ("Managed Xet caches") states the same rules.
//
// A file is deleted or evicted only when ALL of these hold:
//   1. dedupd indexed exactly that file and it is unchanged (same size and
//      mtime as the index's source record, a regular file);
//   2. for a merge's original: its content is in a merged file that exists,
//      is durable (written and fsync'd by the steward) and verifies now;
//   3. no client that could have loaded it is alive, judged on boot time and
//      process start ticks; or, the one bounded exception, `replaced_grace`
//      has passed since the steward first wanted it gone, measured on a
//      monotonic clock, so a long-lived process cannot hold a cache over its
//      caps for ever. A deletion under a live client costs that session the
//      bytes it re-uploads, which is why the wait exists;
//   4. it is not a shard an admin removed (`dedupctl remove`): such a file
//      is never merged and never deleted by the steward.
// When liveness cannot be established for a root, every client counts as
// alive (fail closed): only the grace lets a file go there.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dedupd::xetcache {

// "xet_20261124T044239620-0500_8006.log": the client's process start in its
// LOCAL time to the millisecond, the local offset from UTC, and its pid.
struct ClientLog {
  std::int64_t started_unix = 0;  // UTC seconds: the local time minus its offset
  pid_t pid = 0;
  // A name without an offset could be any zone's time: started_unix is then
  // read as UTC and is this far from the truth at most.
  std::uint64_t uncertainty_seconds = 0;
};
// Nullopt for any other name (or an impossible date or offset).
std::optional<ClientLog> parse_client_log_name(std::string_view name);

// How the kernel counts process start times: /proc/stat btime (wall seconds
// at boot, as the kernel sees it now) and clock ticks per second.
struct BootClock {
  std::int64_t boot_unix = 0;
  std::uint64_t ticks_per_second = 100;
};

// Whether the process now running under the log's pid, started
// `start_ticks` after boot (/proc/<pid>/stat field 22), may be the process
// that wrote the log. Only a start clearly after the log's time (by more
// than `slack_seconds`: the log is named once logging starts) proves a
// reused pid; anything else counts as the client (fail closed). Compared in
// ticks since boot, so only the log's own wall time is involved.
bool may_be_logged_client(const ClientLog& log, std::uint64_t start_ticks, const BootClock& boot,
                          std::uint64_t slack_seconds = 5);

// A client log whose pid runs no process here, and which grows between two
// passes, is written by a client in another pid namespace or on another
// host. One seen for the first time cannot be told from an ended client's
// unless it is older than this (by its mtime).
inline constexpr std::uint64_t kRecentLogSeconds = 600;

// Why liveness may not be known for a root, as the probes found it.
struct LivenessFacts {
  enum class Logs : std::uint8_t { readable, missing, denied, unreadable } logs = Logs::readable;
  std::string logs_error;                 // errno text when not readable
  std::size_t client_logs = 0;            // names parse_client_log_name accepts
  std::size_t alive_clients = 0;          // of those, processes that may be the client
  std::optional<std::string> network_fs;  // the cache's file system type when it is a network one
  bool foreign_pid_namespace = false;     // dedupd does not see the host's pids
  // Logs of pids not running here, never seen running by this steward, that
  // grew since the last pass (or, first seen, are younger than kRecentLogSeconds).
  std::size_t recent_unmatched_logs = 0;
  bool log_dest_redirected = false;  // HF_XET_LOG_DEST set where dedupd runs
};

struct LivenessVerdict {
  bool established = false;  // false: every client counts as alive
  std::size_t alive_clients = 0;
  std::string why;  // for the status: what was seen, or why it cannot be told
};

LivenessVerdict judge_liveness(const LivenessFacts& facts);

// What the steward knows about one file it wants gone.
struct DeletionFacts {
  bool indexed_unchanged = false;
  bool removed_by_admin = false;
  bool is_merge_original = false;
  bool merged_verifies = false;  // only read for a merge's original
  // Monotonic seconds: now, and since when the steward has wanted the file gone.
  std::uint64_t now_mono = 0;
  std::uint64_t wanted_since_mono = 0;
  std::uint64_t grace_seconds = 0;
};

struct Decision {
  bool allowed = false;
  std::string why;  // the rule that holds it back, or why it may go
};

Decision may_delete(const DeletionFacts& facts, const LivenessVerdict& liveness);

// Backoff of something held back after a failure: 1, 2, 4, ... times
// `base_seconds`, at most `max_seconds`.
std::uint64_t backoff_seconds(std::uint32_t failures, std::uint64_t base_seconds, std::uint64_t max_seconds);

}  // namespace dedupd::xetcache
