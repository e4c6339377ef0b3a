// The answer to a batch of chunk queries (POST /v1/chunk), block by block as
// the client reads it: each block of hashes is looked up in one read
// transaction, its misses asked of the fleet in one round trip, and handed
// to whoever writes it; then the next. Memory is three blocks, whatever the
// batch holds.
//
// A batch of more than one block has its next two blocks looked up, each on
// a helper thread, while one is written: the lookups (most of the work)
// take a second core, beside the writing, the socket and the client. With a
// fleet, each helper asks the fleet for its block's misses on a pooled
// connection of its own: the fleet's round trips and the database's work
// overlap too. A block asked ahead that finds every connection lent out is
// not answered "unavailable": it is asked again in turn, once the lookups
// in flight are done (ask_fleet_for_misses' only_if_idle).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <optional>
#include <span>
#include <vector>

#include "base/result.hpp"
#include "daemon/answers/fleet_misses.hpp"
#include "daemon/answers/lookups.hpp"
#include "index/types.hpp"

namespace dedupd::daemon::answers {

// One block of a batch's hashes with its answers: query i's locations are
// local.of(i) first, then remote.of(i).
struct ChunkBlock {
  std::vector<shard::Hash> hashes;
  index::BatchResult local;
  FleetMisses remote;  // remote.reach: how the fleet part of this block went
  std::optional<base::Error> error;

  bool found(std::size_t i) const {
    return local.first[i + 1] != local.first[i] || !remote.of(std::uint32_t(i)).empty();
  }
  std::uint64_t hits() const {
    std::uint64_t n = 0;
    for (std::size_t i = 0; i < hashes.size(); ++i) n += found(i);
    return n;
  }
};

class ChunkBlocks {
 public:
  // The next block of the batch's hashes, in order; empty at the end. Called
  // on the thread that calls next() only.
  using NextHashes = std::function<base::Result<std::span<const shard::Hash>>()>;

  ChunkBlocks(Lookups lookups, NextHashes next_hashes);
  ~ChunkBlocks();  // waits for the blocks in flight: they use the lookups
  ChunkBlocks(const ChunkBlocks&) = delete;
  ChunkBlocks& operator=(const ChunkBlocks&) = delete;

  // The next block, answered; no hashes at the end. A failed lookup (or
  // spool) sets the block's error, and the answer ends there.
  ChunkBlock next();
  // The fleet's part over the blocks handed out so far (combine_reach).
  Reach reach() const { return reach_; }

 private:
  static constexpr std::size_t kAhead = 2;  // blocks looked up ahead, at most

  struct Looked {
    ChunkBlock block;
    bool fleet_deferred = false;  // asked ahead, every fleet connection was lent: ask in turn
  };
  // Reads the next block of hashes (on this thread: the spool is not
  // shared) and looks it up, on a helper thread when `ahead`.
  void start_next(bool ahead);
  Looked look_up(ChunkBlock block, bool ahead) const;

  Lookups lookups_;
  NextHashes next_hashes_;
  Reach reach_ = Reach::off;
  std::deque<std::future<Looked>> ahead_;  // the next blocks, looked up meanwhile, in order
  std::optional<Looked> ready_;            // or already looked up (no helper thread)
  bool hashes_ended_ = false;              // the last block of hashes was read
};

}  // namespace dedupd::daemon::answers
