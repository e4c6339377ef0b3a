// Reader::shard_xorbs: a fleet shard's xorbs for a global-dedup reply, taken
// as a local reply takes a live shard's (daemon/answers/global_dedup_plan.hpp). Of
// the shards holding the queried chunk, the one a local reply would prefer
// answers: raw first (the caller re-keys it), then the one whose key
// expires last. Its xorbs come with the asked one first, then those after
// it in the shard's own order (schema 2's xorb_order), then those before,
// until the next would pass max_xorbs or max_block_bytes. The shard's key
// and expiry come with them, so a keyed shard can be served as stored; an
// expired one is never served.
#include "fleet/connection.hpp"
#include "fleet/fleet.hpp"

namespace dedupd::fleet {
namespace {

using wire::Params;

// One statement; the bounds are applied by the server (a running sum of
// block lengths, which TOAST knows without reading the blocks), so no more
// than the reply needs crosses the wire.
constexpr const char* kShardXorbs =
    // The best live candidate that lists its xorb (a unique (hash, key_id)
    // index finds the xorb's rows; the shard's array is searched for them).
    "WITH s AS (SELECT sh.hash, sh.key_id, sh.expiry, sh.xorb_order, c.xorb_hash "
    "FROM unnest($1::bytea[], $2::bytea[]) AS c (shard_hash, xorb_hash) JOIN dedupd.shard sh ON sh.hash = c.shard_hash "
    "WHERE (sh.expiry IS NULL OR sh.expiry > $5) AND EXISTS (SELECT 1 FROM dedupd.xorb x "
    "WHERE x.hash = c.xorb_hash AND x.id = ANY (sh.xorb_order)) "
    "ORDER BY sh.key_id IS NOT NULL, sh.expiry DESC NULLS FIRST, sh.hash LIMIT 1), "
    "o AS (SELECT u.id, u.n FROM s, unnest(s.xorb_order) WITH ORDINALITY AS u (id, n)), "
    "f AS (SELECT min(o.n) AS n FROM o WHERE o.id IN (SELECT x.id FROM dedupd.xorb x, s WHERE x.hash = s.xorb_hash)), "
    "ranked AS (SELECT o.id, row_number() OVER (ORDER BY o.n < f.n, o.n) AS rank FROM o, f WHERE f.n IS NOT NULL), "
    "sized AS (SELECT r.rank, r.id, sum(octet_length(x.cas_block)::int8) OVER (ORDER BY r.rank) AS total "
    "FROM ranked r JOIN dedupd.xorb x ON x.id = r.id) "
    "SELECT (SELECT hash FROM s), (SELECT expiry FROM s), (SELECT k.key FROM s JOIN dedupd.chunk_key k ON k.id = "
    "s.key_id), x.hash, x.cas_block FROM sized z JOIN dedupd.xorb x ON x.id = z.id "
    "WHERE z.rank = 1 OR (z.rank <= $3 AND z.total <= $4) ORDER BY z.rank";

}  // namespace

Result<std::optional<ShardXorbs>> Reader::shard_xorbs(std::span<const ShardCandidate> candidates,
                                                      const ShardXorbBounds& bounds, std::uint64_t now,
                                                      Deadline deadline) {
  if (candidates.empty()) return std::optional<ShardXorbs>{};
  if (auto c = ensure_connected(deadline); !c) return c.error();
  std::vector<std::span<const std::uint8_t>> shards, xorbs;
  for (const ShardCandidate& c : candidates) {
    shards.push_back(c.shard.bytes);
    xorbs.push_back(c.xorb.bytes);
  }
  auto rows = query(kShardXorbs,
                    Params()
                        .bytea_array(shards)
                        .bytea_array(xorbs)
                        .int8(wire::saturating_int8(bounds.max_xorbs))
                        .int8(wire::saturating_int8(bounds.max_block_bytes))
                        .int8(wire::saturating_int8(now)),
                    deadline);
  if (!rows) return rows.error();
  if (rows->size() == 0) return std::optional<ShardXorbs>{};
  ShardXorbs out;
  if (rows->bytes(0, 0).size() != 32) return make_error(kRuleProtocol, "a shard hash of the wrong size");
  out.shard = rows->hash(0, 0);
  if (!rows->null(0, 1)) out.expiry = std::uint64_t(rows->int8(0, 1));
  if (!rows->null(0, 2)) {
    if (rows->bytes(0, 2).size() != 32) return make_error(kRuleProtocol, "a shard key of the wrong size");
    out.key = rows->hash(0, 2);
  }
  for (int r = 0; r < rows->size(); ++r) {
    auto block = rows->bytes(r, 4);
    // Published from a validated shard; checked again so a reader of the
    // reply (shard::XorbBlock) never runs off its end.
    if (rows->bytes(r, 3).size() != 32 || block.size() < shard::kEntrySize ||
        block.size() != shard::XorbBlock(block.data(), 0).byte_size())
      return make_error(kRuleProtocol, "a stored CAS block of shard " + out.shard.to_string() + " has the wrong size");
    out.xorbs.push_back({rows->hash(r, 3), std::vector<std::uint8_t>(block.begin(), block.end())});
  }
  return std::optional<ShardXorbs>(std::move(out));
}

}  // namespace dedupd::fleet
