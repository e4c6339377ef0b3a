// A refusal heals itself: when the CAS refuses a shard a client
// uploaded through the endpoint, the xorbs that shard names without carrying
// them are ones the client was told it need not upload: by dedupd's answer,
// or by its own cache, which dedupd's answers filled. The CAS lacks one of
// them (another CAS's, or deleted since). The shards of that CAS in the
// index holding them are set aside, with why, so they answer no more
// global-dedup queries and the client's next attempt uploads the bytes.
// Wrongly set aside, a shard costs only dedup until an admin restores it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "index/index.hpp"
#include "shard/reader.hpp"

namespace dedupd::daemon::learn {

// The xorbs a shard's files use that its CAS section does not carry, each
// once, at most `max`.
std::vector<shard::Hash> xorbs_named_not_carried(const shard::ShardView& shard, std::size_t max = 1024);

struct Healed {
  std::vector<shard::Hash> set_aside;  // shards set aside now
  std::size_t xorbs_named = 0;
};

// Sets aside the live shards of `cas` (and of unknown CAS when
// `unknown_too`: those answered the endpoint as well) that hold a xorb the
// refused shard named without carrying. `refused_hash` names it in the
// reason.
base::Result<Healed> set_aside_stale(index::Index& idx, const shard::ShardView& refused,
                                     const std::string& refused_hash, const std::string& cas, bool unknown_too,
                                     std::uint64_t now);

}  // namespace dedupd::daemon::learn
