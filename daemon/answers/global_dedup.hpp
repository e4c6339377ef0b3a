// The Xet global-dedup query (GET /v1/chunks/default-merkledb/<hash>):
// which xorbs answer it and under which key, as the Hugging Face server and
// xet-core's local simulation server answer, read from the index or, for a
// chunk this index lacks, from the fleet. render/global_dedup writes the
// reply's bytes from it (a shard).
//
// What goes in (docs/API.md, "Xet global-dedup endpoint" says it for users):
// the CAS section of the live shard the chunk came from, the whole upload,
// not only the chunk's xorb. A client asks about few chunks (the first of a
// file, then about one in 1024, at least 256 apart, and none it already
// knows), so an answer of one xorb leaves most of a shared file
// undiscovered. Which shard and which of its xorbs: global_dedup_plan.hpp.
// A chunk this index lacks is answered from the fleet shard it came from,
// chosen the same way, its xorbs in the same order and bounds; one shard
// only: the room left is not filled from others, which would cost another
// wait.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "daemon/answers/global_dedup_plan.hpp"
#include "daemon/answers/lookups.hpp"
#include "shard/format.hpp"

namespace dedupd::daemon::answers {

// A reply's content: its xorbs in reply order, their chunk hashes as
// stored, and how the reply is keyed. A Xet client keys its own chunk
// hashes with the footer key and matches them against the CAS blocks, so
// every chunk hash must end up keyed with that one key.
struct GlobalDedupReply {
  std::vector<shard::XorbRecord> xorbs;  // never empty
  bool rekey = false;                    // raw as stored: key every chunk hash with `key`
  shard::Key key;                        // the footer key
  std::uint64_t expiry = 0;              // the footer's key expiry
  std::uint64_t created = 0;             // the footer's creation time
};

// The reply for a raw chunk hash from this index, read in one snapshot per
// source shard; nullopt when no live shard holds the chunk.
base::Result<std::optional<GlobalDedupReply>> local_reply(const index::Index& index, const shard::Hash& raw_chunk,
                                                          const ReplySettings& settings);

// The reply from the fleet shard a chunk came from (fleet::Reader::
// shard_xorbs: the chunk's xorb first); nullopt when it brought no xorb or
// a keyed source has expired since the fleet answered.
std::optional<GlobalDedupReply> fleet_reply(const fleet::ShardXorbs& source, const ReplySettings& settings);

struct GlobalDedupQuestion {
  shard::Hash chunk;  // raw
  // Asked through the local Xet endpoint: its clients get the endpoint's
  // reply lifetime (xet_endpoint.reply_expiry).
  bool via_endpoint = false;
  // The asking client's CAS, a normalized URL: only shards it admits answer.
  std::optional<std::string> cas{};
};

struct GlobalDedupAnswer {
  std::optional<GlobalDedupReply> reply;  // nullopt: no shard known to hold the chunk
  Reach fleet = Reach::off;               // how asking the fleet went (off: not asked)
};

base::Result<GlobalDedupAnswer> answer_global_dedup(const Lookups& lookups, const GlobalDedupQuestion& question,
                                                    std::uint64_t now);

}  // namespace dedupd::daemon::answers
