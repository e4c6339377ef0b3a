// Where one chunk lives (GET /v1/chunk/<hash>): this index's locations,
// else the fleet's; and, when neither has it, the expired shards that held
// it, which say why.
#pragma once

#include <span>
#include <vector>

#include "base/result.hpp"
#include "daemon/answers/fleet_misses.hpp"
#include "daemon/answers/lookups.hpp"
#include "index/types.hpp"

namespace dedupd::daemon::answers {

struct ChunkAnswer {
  std::vector<index::Location> local;
  // Asked only when `local` is empty; its one query is 0.
  FleetMisses remote;
  // Not found anywhere: the expired shards that held it (kept a while after
  // their expiry). A hint only: empty when the index could not tell.
  std::vector<index::ShardInfo> expired;

  std::span<const fleet::ChunkLocation> fleet_locations() const { return remote.of(0); }
  bool found() const { return !local.empty() || !fleet_locations().empty(); }
};

// An index read that fails is an error ("index.*"); the fleet's part never
// is, its reach says how it went.
base::Result<ChunkAnswer> answer_chunk(const Lookups& lookups, const shard::Hash& raw_chunk);

}  // namespace dedupd::daemon::answers
