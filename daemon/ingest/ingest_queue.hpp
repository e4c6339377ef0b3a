// The files on their way into the index: watcher -> IngestQueue -> Ingester.
// Each path is queued once; the work loop takes them in turn within a time
// budget. A file that fails for a reason that passes waits (WaitingFiles),
// and comes back with its backoff, at once when another write goes through,
// or when free space under state_dir grows again. While a damaged index is
// rebuilt from the shards, the queue the start filled is the rebuild: the
// health board says how far it is. The work loop owns the queue; the
// methods marked "any thread" are what status reads.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "daemon/core/index_health_board.hpp"
#include "daemon/core/status.hpp"
#include "daemon/ingest/ingester.hpp"
#include "daemon/ingest/waiting.hpp"
#include "daemon/watch/watcher.hpp"

namespace dedupd::daemon::ingest {

// What the file system under `dir` has free for dedupd (f_bavail: root's
// reserve is not ours when the unit runs as its own user).
core::StateDirSpace space_of(const std::filesystem::path& dir);

class IngestQueue {
 public:
  using Clock = std::chrono::steady_clock;
  using SpaceProbe = std::function<core::StateDirSpace(const std::filesystem::path&)>;

  // What the loop's other parts learn from an ingest.
  struct Events {
    std::function<void()> expiry_may_move;  // a shard went in, or failed: its expiry may come first
    std::function<void()> expired_found;    // a shard already expired was recorded: its file may be due
    std::function<void()> between_files;    // after each file (nothing else runs on the loop meanwhile)
    std::function<void()> drained;          // the queue ran empty
  };

  // The free space a waiting file's retry needs to see appear before the
  // files out of space are all tried again at once (besides their backoff).
  static constexpr std::uint64_t kSpaceReturned = 1 << 20;
  static constexpr auto kSpaceCheckEvery = std::chrono::seconds(1);
  // One file's ingest worth a warning: a third of the unit's WatchdogSec.
  static constexpr auto kSlowIngest = std::chrono::seconds(10);

  IngestQueue(Ingester& ingester, std::filesystem::path state_dir, core::IndexHealthBoard& health,
              SpaceProbe space = space_of);
  void set_events(Events events) { events_ = std::move(events); }

  // Queues the files not queued already.
  void add(std::vector<watch::Candidate> files);
  // Ingests queued files, oldest first, until the queue is empty or
  // `budget` has passed.
  void ingest(std::chrono::milliseconds budget);
  // Queues the waiting files whose retry is due, all of them when the
  // free space under state_dir grew since the last look.
  void retry_waiting(Clock::time_point now);
  // Ingests `files` now, before anything queued (the admin's rescan); a
  // file queued already leaves the queue.
  core::RescanResult ingest_now(const std::vector<watch::Candidate>& files);
  // Expiry or a removal gave pages back to the index: every waiting file
  // may fit now.
  void space_freed(Clock::time_point now);

  // The files queued now are a rebuild's: its progress is theirs, noted
  // as they go in. It is done when the queue it filled has drained (files
  // that wait for space included).
  void track_rebuild();

  bool idle() const { return pending_.empty(); }
  std::size_t queued() const { return pending_.size(); }
  // The next look at the free space and the waiting files' backoff;
  // nullopt while none waits.
  std::optional<Clock::time_point> next_retry() const;
  std::size_t waiting() const { return waiting_.size(); }
  bool out_of_space() const { return waiting_.out_of_space(); }      // any thread
  core::WaitingStatus waiting_status(std::uint64_t unix_now) const;  // any thread
  core::StateDirSpace state_dir_space() const;                       // any thread

 private:
  FileOutcome ingest_one(const watch::Candidate& c);
  void note_rebuild_progress();

  Ingester& ingester_;
  const std::filesystem::path state_dir_;
  core::IndexHealthBoard& health_;
  const SpaceProbe space_;
  Events events_;
  std::deque<watch::Candidate> pending_;
  std::unordered_set<std::string> pending_paths_;  // no file queued twice
  WaitingFiles waiting_;                           // failed for a reason that passes
  Clock::time_point next_space_check_;
  std::optional<std::uint64_t> last_free_bytes_;  // state_dir's, at the last check
};

}  // namespace dedupd::daemon::ingest
