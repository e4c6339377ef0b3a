// The index opened at start, or, when it is damaged, moved aside and a new
// one started: damage the start-up checks of its file find (before LMDB maps
// it: a truncated file or broken meta pages would be a SIGBUS or a refusal
// to start), the mark a run that found damage left (jobs/rebuild_restart),
// or LMDB's own complaint on opening. The damaged index is kept beside the
// new one for an admin; the new one is rebuilt from the shards dedupd knows,
// and the health board says so until that is done.
#pragma once

#include <memory>

#include "daemon/core/index_health_board.hpp"
#include "index/index.hpp"

namespace dedupd::daemon::supervisor {

// nullptr (logged) when the index can neither be opened nor moved aside.
std::unique_ptr<index::Index> open_or_move_aside(const index::Options& options, core::IndexHealthBoard& health);

}  // namespace dedupd::daemon::supervisor
