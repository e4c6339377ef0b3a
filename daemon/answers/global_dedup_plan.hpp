// The choices behind a Xet global-dedup reply (global_dedup.hpp): which
// shard answers, under which key and for how long, and which of its xorbs
// go in, in which order, within the reply's bounds. Pure functions of what
// the index or the fleet said; nothing here reads either.
//
// - Which shard: raw ones (stored with raw chunk hashes) are re-keyed with
//   the daemon's key and valid for the whole reply lifetime, so they win.
//   A shard known only keyed (e.g. a reply the daemon indexed from the
//   Hugging Face server) cannot be re-keyed without its raw hashes; it is
//   re-served as stored, under its own key, for no longer than its expiry.
//   The shard valid longest wins; other shards holding the chunk fill the
//   room left when they share the reply's key and do not shorten its life.
// - Which xorbs: the chunk's own xorb first, then the xorbs after it in the
//   shard, then those before it (a client reads its file forward, so what
//   follows the chunk is what it meets next), taken until the next one
//   would pass max_xorbs or make the reply larger than max_bytes. The
//   chunk's own xorb always goes in: it is the answer to the question.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_set>
#include <vector>

#include "fleet/fleet.hpp"
#include "index/index.hpp"
#include "shard/cas_scope.hpp"
#include "shard/format.hpp"
#include "shard/keys.hpp"

namespace dedupd::daemon::answers {

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
// The plan for one source shard the fleet chose: raw, re-keyed with the
// daemon's key; keyed, served under its own key no longer than its expiry.
ReplyPlan plan_fleet_reply(const fleet::ShardXorbs& source, const ReplySettings& settings);

// Positions of a shard's `count` xorbs in reply order: `first`, those after
// it, then those before it.
std::vector<std::size_t> xorb_order(std::size_t count, std::size_t first);

// The xorbs of a reply chosen shard by shard, in plan order, within the
// bounds: a xorb already taken from an earlier shard is not taken again.
class XorbChoice {
 public:
  explicit XorbChoice(const ReplyBounds& bounds)
      : xorbs_left_(bounds.max_xorbs),
        bytes_left_(bounds.max_bytes > kReplyFramingBytes ? bounds.max_bytes - kReplyFramingBytes : 0) {}

  // The positions of `heads` to take from a shard whose xorb `own` holds the
  // chunk; sets full() once the next xorb did not fit.
  std::vector<std::size_t> choose(std::span<const index::Index::XorbHead> heads, const shard::Hash& own);
  bool full() const { return full_; }

 private:
  std::uint64_t xorbs_left_, bytes_left_;
  std::unordered_set<shard::Hash> taken_;
  bool full_ = false;
};

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

}  // namespace dedupd::daemon::answers
