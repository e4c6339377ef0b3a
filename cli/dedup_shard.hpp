// dedup-shard: the Xet global-dedup reply for a chunk, written as a shard file.
#pragma once

#include <string>

#include "cli/context.hpp"

namespace dedupctl {

// output: a path (written whole or not at all) or "-" for stdout.
int dedup_shard(Context& ctx, const std::string& arg, const std::string& output);

}  // namespace dedupctl
