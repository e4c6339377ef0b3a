// The Xet global-dedup reply: a shard shaped as the Hugging Face server
// answers GET /v1/chunks/default-merkledb/<hash>. A Xet client keys its own
// chunk hashes with the footer key and matches them against the CAS blocks,
// so every chunk hash in the reply must be keyed with that one footer key.
//
// What goes in (docs/API.md, "Xet global-dedup endpoint" says it for users):
// - The CAS section of the live shard the chunk came from, as the Hugging
//   Face server and xet-core's local simulation server answer: the whole
//   upload, not only the chunk's xorb. A client asks about few chunks (the
//   first of a file, then about one in 1024, at least 256 apart, and none it
//   already knows), so an answer of one xorb leaves most of a shared file
//   undiscovered. The chunk's own xorb goes first, then the xorbs after it
//   in the shard, then those before it: a client reads its file forward, so
//   what follows the chunk is what it meets next.
// - Within ReplyBounds: xorbs are taken in that order until the next one
//   would pass max_xorbs or make the reply larger than max_bytes. The
//   chunk's own xorb always goes in (it is the answer to the question).
// - Which shard: raw ones (stored with raw chunk hashes) are re-keyed with
//   the daemon's key and valid for the whole reply lifetime, so they win.
//   A shard known only keyed (e.g. a reply the daemon indexed from the
//   Hugging Face server) cannot be re-keyed without its raw hashes; it is
//   re-served as stored, under its own key, for no longer than its expiry.
//   The shard valid longest wins; other shards holding the chunk fill the
//   room left when they share the reply's key and do not shorten its life.
// - A chunk this index lacks is answered from the fleet (daemon/fleet/)
//   the same way: the fleet shard the chunk came from, chosen as above
//   (raw first, re-keyed; else keyed, as stored, for no longer than its
//   expiry), its xorbs in the same order and bounds. One shard only: the
//   room left is not filled from others, which would cost another wait.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "fleet/fleet.hpp"
#include "index/index.hpp"
#include "shard/cas_scope.hpp"
#include "shard/format.hpp"
#include "shard/keys.hpp"

namespace dedupd::daemon::http {

// Defaults fit a whole upload shard of the Xet client (64 MiB, its
// MDB_SHARD_TARGET_SIZE in xet-core): its CAS section plus the reply's
// framing stays under 64 MiB, i.e. at most ~1.4 M chunk entries. Its xorbs
// are cut at 64 MiB or 8,192 chunks, and every one but a session's last
// carries at least half of that, so >= 256 chunks of at most 128 KiB: at
// most ~5,400 xorbs (~1,365 of ~1,024 chunks at the 64 KiB target size).
struct ReplyBounds {
  std::uint64_t max_xorbs = 8192;
  std::uint64_t max_bytes = 64ull << 20;  // the whole reply body
};

struct ReplySettings {
  shard::Key key;                // the daemon's current global-dedup key
  std::uint64_t now = 0;         // unix seconds: the reply's creation time
  std::uint64_t lifetime_s = 0;  // a raw source's reply expires at now + lifetime_s
  ReplyBounds bounds{};
  // The asking client's CAS: only shards it admits answer (nullopt: any).
  // Set-aside shards never answer.
  std::optional<shard::CasScope> scope{};
};

// Bytes of a reply besides its xorb blocks: header, the empty file-info
// section's bookend, the CAS bookend and the footer.
inline constexpr std::uint64_t kReplyFramingBytes = shard::kHeaderSize + 2 * shard::kEntrySize + shard::kFooterSize;
inline constexpr std::uint64_t xorb_block_bytes(std::uint64_t chunks) { return shard::kEntrySize * (1 + chunks); }

// A live shard holding the queried chunk, and the xorb it holds it in.
struct SourceShard {
  index::ShardRef shard;
  shard::Hash xorb;
};

// Where a reply's xorbs come from: `sources` best first (the first one gives
// the chunk's xorb); all of them share the reply's key.
struct ReplyPlan {
  std::vector<SourceShard> sources;
  bool rekey = false;  // raw sources: chunk hashes get keyed with `key`
  shard::Key key;      // the footer key
  std::uint64_t expiry = 0;
};
// nullopt when `holders` is empty.
std::optional<ReplyPlan> plan_reply(std::span<const SourceShard> holders, const ReplySettings& settings);

// Positions of a shard's `count` xorbs in reply order: `first`, those after
// it, then those before it.
std::vector<std::size_t> xorb_order(std::size_t count, std::size_t first);

// The reply for a raw chunk hash, read from the index in one snapshot per
// source shard; nullopt when no live shard holds the chunk (404).
shard::Result<std::optional<std::vector<std::uint8_t>>> build_global_dedup_reply(const index::Index& idx,
                                                                                 const shard::Hash& raw_chunk,
                                                                                 const ReplySettings& settings);

// A reply from the fleet brings at most this many bytes of CAS blocks: they
// cross the network within the fleet lookup bound (50 ms by default), and
// bench_fleet measures about 1.5 ms per MB on a quiet 2-core host
// (docs/PERFORMANCE.md), so 8 MiB (~175 k chunk entries, ~10 GiB of file
// data) leaves room for a loaded server. A client finds what lies past it
// with its next query, answered from there on.
inline constexpr std::uint64_t kFleetReplyMaxBlockBytes = 8ull << 20;

// What a fleet source shard may bring to a reply within `bounds`: the same
// xorb count, and the bytes left for CAS blocks after the framing, at most
// kFleetReplyMaxBlockBytes.
fleet::ShardXorbBounds fleet_source_bounds(const ReplyBounds& bounds);

// The reply for a chunk this index lacks, from the fleet shard it came from
// (fleet::Reader::shard_xorbs: the chunk's xorb first); raw blocks are
// re-keyed with the daemon's key, keyed ones served under their own.
// nullopt when the shard brought no xorb.
std::optional<std::vector<std::uint8_t>> build_fleet_global_dedup_reply(const fleet::ShardXorbs& source,
                                                                        const ReplySettings& settings);

}  // namespace dedupd::daemon::http
