#include "daemon/answers/chunk_batch.hpp"

namespace dedupd::daemon::answers {

ChunkBlocks::ChunkBlocks(Lookups lookups, NextHashes next_hashes)
    : lookups_(lookups), next_hashes_(std::move(next_hashes)) {}

ChunkBlocks::~ChunkBlocks() {
  for (auto& f : ahead_)
    if (f.valid()) f.wait();
}

ChunkBlocks::Looked ChunkBlocks::look_up(ChunkBlock block, bool ahead) const {
  Looked out{std::move(block)};
  ChunkBlock& b = out.block;
  if (b.hashes.empty()) return out;
  if (auto st = lookups_.index().lookup_batch(b.hashes, b.local); !st) {
    b.error = st.error();
    return out;
  }
  if (FleetPort* fleet = lookups_.fleet())
    out.fleet_deferred = !ask_fleet_for_misses(*fleet, b.hashes, b.local, b.remote, ahead);
  return out;
}

void ChunkBlocks::start_next(bool ahead) {
  ChunkBlock b;
  auto next = next_hashes_();
  if (!next) {
    b.error = next.error();
    ready_ = Looked{std::move(b)};
    return;
  }
  b.hashes.assign(next->begin(), next->end());
  hashes_ended_ = b.hashes.empty();
  if (ahead && !b.hashes.empty())
    ahead_.push_back(std::async(
        std::launch::async, [this](ChunkBlock blk) { return look_up(std::move(blk), true); }, std::move(b)));
  else ready_ = look_up(std::move(b), false);
}

ChunkBlock ChunkBlocks::next() {
  if (ahead_.empty() && !ready_) start_next(false);
  Looked looked;
  if (!ahead_.empty()) {
    looked = ahead_.front().get();
    ahead_.pop_front();
  } else {
    looked = std::move(*ready_);
    ready_.reset();
  }
  ChunkBlock& b = looked.block;
  if (looked.fleet_deferred) {
    // Asked in turn, with no lookup of this batch in flight, so the
    // connections it held are back in the pool.
    for (auto& f : ahead_) f.wait();
    ask_fleet_for_misses(*lookups_.fleet(), b.hashes, b.local, b.remote, false);
  }
  if (!b.error && !b.hashes.empty()) reach_ = combine_reach(reach_, b.remote.reach);
  // The next blocks are looked up while this one is written: on another
  // core, and with a fleet answering, their round trips overlap too.
  if (!b.error && !b.hashes.empty() && b.remote.reach != Reach::unavailable)
    while (ahead_.size() < kAhead && !hashes_ended_ && !ready_) start_next(true);
  return std::move(b);
}

}  // namespace dedupd::daemon::answers
