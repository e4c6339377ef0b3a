#include "daemon/ingest/ingest_queue.hpp"

#include <malloc.h>
#include <sys/statvfs.h>

#include <spdlog/spdlog.h>

#include <exception>

#include "daemon/core/clock.hpp"
#include "daemon/log/logging.hpp"

namespace dedupd::daemon::ingest {

namespace fs = std::filesystem;

core::StateDirSpace space_of(const fs::path& dir) {
  core::StateDirSpace s;
  struct statvfs v {};
  if (::statvfs(dir.c_str(), &v) != 0) return s;
  s.known = true;
  s.free_bytes = std::uint64_t(v.f_bavail) * v.f_frsize;
  s.size_bytes = std::uint64_t(v.f_blocks) * v.f_frsize;
  return s;
}

IngestQueue::IngestQueue(Ingester& ingester, fs::path state_dir, core::IndexHealthBoard& health, SpaceProbe space)
    : ingester_(ingester), state_dir_(std::move(state_dir)), health_(health), space_(std::move(space)) {}

void IngestQueue::add(std::vector<watch::Candidate> files) {
  for (auto& f : files)
    if (pending_paths_.insert(f.path.native()).second) pending_.push_back(std::move(f));
}

void IngestQueue::ingest(std::chrono::milliseconds budget) {
  if (pending_.empty()) return;
  const auto deadline = Clock::now() + budget;
  while (!pending_.empty() && Clock::now() < deadline) {
    watch::Candidate c = std::move(pending_.front());
    pending_.pop_front();
    pending_paths_.erase(c.path.native());
    const auto t0 = Clock::now();
    ingest_one(c);
    const auto took = Clock::now() - t0;
    // Nothing else runs on this loop meanwhile, the watchdog's ping
    // included: say so when one file held it long enough to matter.
    if (took > kSlowIngest)
      spdlog::warn("{} held the work loop for {:.1f} s", c.path.native(), std::chrono::duration<double>(took).count());
    if (events_.between_files) events_.between_files();
  }
  // A big shard's ingest allocates in proportion to it and frees it all
  // again, but glibc keeps freed heap for reuse: give it back once the
  // queue is empty, so memory at rest does not follow the largest shard.
  if (pending_.empty()) {
    ::malloc_trim(0);
    if (events_.drained) events_.drained();
  }
  note_rebuild_progress();
}

FileOutcome IngestQueue::ingest_one(const watch::Candidate& c) {
  FileOutcome o = FileOutcome::failed;
  try {
    o = ingester_.ingest_file(c, core::unix_now());
  } catch (const std::exception& e) {
    // Whatever went wrong with one file, the daemon keeps serving.
    spdlog::error("ingesting {}: {}", c.path, e.what());
  }
  if ((o == FileOutcome::added || o == FileOutcome::failed) && events_.expiry_may_move) events_.expiry_may_move();
  if (o == FileOutcome::expired && events_.expired_found) events_.expired_found();
  const auto now = Clock::now();
  if (o == FileOutcome::failed) {
    const base::Error& why = ingester_.last_failure();
    if (is_passing_failure(why.rule)) {
      if (waiting_.empty()) last_free_bytes_ = space_(state_dir_).free_bytes;
      waiting_.wait(c, why.rule, why.message, core::unix_now(), now);
    }
  } else {
    waiting_.settled(c.path.native());
    // A write went through: the others may fit now too.
    if (o == FileOutcome::added && !waiting_.empty()) waiting_.all_due_now(now);
  }
  return o;
}

void IngestQueue::retry_waiting(Clock::time_point now) {
  if (waiting_.empty()) return;
  if (now >= next_space_check_) {
    next_space_check_ = now + kSpaceCheckEvery;
    const core::StateDirSpace space = space_(state_dir_);
    if (space.known) {
      if (last_free_bytes_ && space.free_bytes >= *last_free_bytes_ + kSpaceReturned && waiting_.out_of_space()) {
        spdlog::info("{} free under {} (was {}): trying the {} waiting file(s) again", space.free_bytes, state_dir_,
                     *last_free_bytes_, waiting_.size());
        waiting_.all_due_now(now);
      }
      last_free_bytes_ = space.free_bytes;
    }
  }
  add(waiting_.due(now));
}

core::RescanResult IngestQueue::ingest_now(const std::vector<watch::Candidate>& files) {
  core::RescanResult r;
  r.scanned = files.size();
  for (const auto& f : files) {
    pending_paths_.erase(f.path.native());  // done now rather than later
    const FileOutcome o = ingest_one(f);
    if (o == FileOutcome::added) r.ingested++;
    if (o == FileOutcome::rejected) r.rejected++;
    if (events_.between_files) events_.between_files();
  }
  std::erase_if(pending_, [&](const watch::Candidate& c) { return !pending_paths_.contains(c.path.native()); });
  note_rebuild_progress();
  return r;
}

void IngestQueue::space_freed(Clock::time_point now) {
  if (!waiting_.empty()) waiting_.all_due_now(now);
}

void IngestQueue::track_rebuild() {
  health_.update([&](core::IndexHealth& h) { h.rebuild_files_total = pending_.size(); });
  note_rebuild_progress();
}

void IngestQueue::note_rebuild_progress() {
  if (!health_.rebuilding()) return;
  const std::uint64_t left = pending_.size() + waiting_.size();
  health_.update([&](core::IndexHealth& h) {
    h.rebuild_files_done = h.rebuild_files_total > left ? h.rebuild_files_total - left : 0;
    if (left != 0) return;
    h.state = "rebuilt";
    health_.set_rebuilding(false);
    spdlog::warn("the index is rebuilt from {} file(s); the damaged one stays at {} until an admin removes it",
                 h.rebuild_files_total, h.moved_to);
  });
}

std::optional<IngestQueue::Clock::time_point> IngestQueue::next_retry() const {
  if (waiting_.empty()) return std::nullopt;
  return next_space_check_;
}

core::WaitingStatus IngestQueue::waiting_status(std::uint64_t unix_now) const { return waiting_.status(unix_now); }

core::StateDirSpace IngestQueue::state_dir_space() const {
  core::StateDirSpace s = space_(state_dir_);
  s.full = waiting_.out_of_space();
  return s;
}

}  // namespace dedupd::daemon::ingest
