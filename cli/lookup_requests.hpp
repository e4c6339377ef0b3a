// The lookup verbs: what dedupd knows about one chunk, xorb, file, sha256
// or shard. Their command lines are in lookup_verbs.cpp.
#pragma once

#include <string>
#include <vector>

#include "cli/context.hpp"

namespace dedupctl {

struct QueryArgs {
  std::vector<std::string> hashes;  // HASH arguments, "-" for stdin
  std::string from;                 // --from FILE
  std::string format;               // --format; "" = table, or json with --json
  bool json_lines = false;
  std::string fields;
  bool local_only = false;  // --local-only
};

int query(Context& ctx, const QueryArgs& q);
int xorb(Context& ctx, const std::string& arg, bool list_chunks);
int file(Context& ctx, const std::string& arg);
int sha256(Context& ctx, const std::string& arg);
int shard_info(Context& ctx, const std::string& arg);

}  // namespace dedupctl
