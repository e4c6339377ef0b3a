// What dedupd holds and how it runs: the shard list, index counts, status.
#pragma once

#include <string>

#include "cli/context.hpp"

namespace dedupctl {

// state: "" for every shard, or live, expired, rejected, removed.
int shards(Context& ctx, const std::string& state);
int stats(Context& ctx);
int status(Context& ctx);
// Each managed Xet cache in full: before -> after, pending, liveness and
// why, clients, lock holder, set-aside reasons (the steward's status).
int xet_cache_status(Context& ctx);
// The steward's next pass as a dry run: what would merge, be deleted or
// evicted, why, and what each step saves. `root` "" for every cache.
int xet_cache_plan(Context& ctx, const std::string& root);

}  // namespace dedupctl
