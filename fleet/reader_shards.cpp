// Reader::shard_xorbs: a fleet shard's xorbs for a global-dedup reply, taken
// as a local reply takes a live shard's (daemon/api/global_dedup.hpp): the
// asked xorb first, then those after it in the shard's own order (schema
// 2's xorb_order), then those before, until the next would pass max_xorbs
// or max_block_bytes. The shard's key and expiry come with them, so a keyed
// shard can be served as stored; an expired one is never served.
#include "fleet/connection.hpp"
#include "fleet/fleet.hpp"

namespace dedupd::fleet {
namespace {

using wire::Params;

std::span<const std::uint8_t> bytes_of(const Hash& h) { return {h.bytes.data(), 32}; }

// One statement; the bounds are applied by the server (a running sum of
// block lengths, which TOAST knows without reading the blocks), so no more
// than the reply needs crosses the wire.
constexpr const char* kShardXorbs =
    "WITH s AS (SELECT key_id, expiry, xorb_order FROM dedupd.shard WHERE hash = $1 AND (expiry IS NULL OR expiry > "
    "$5)), "
    "o AS (SELECT u.id, u.n FROM s, unnest(s.xorb_order) WITH ORDINALITY AS u (id, n)), "
    "f AS (SELECT min(o.n) AS n FROM o JOIN dedupd.xorb x ON x.id = o.id WHERE x.hash = $2), "
    "ranked AS (SELECT o.id, row_number() OVER (ORDER BY o.n < f.n, o.n) AS rank FROM o, f WHERE f.n IS NOT NULL), "
    "sized AS (SELECT r.rank, r.id, sum(octet_length(x.cas_block)::int8) OVER (ORDER BY r.rank) AS total "
    "FROM ranked r JOIN dedupd.xorb x ON x.id = r.id) "
    "SELECT (SELECT expiry FROM s), (SELECT k.key FROM s JOIN dedupd.chunk_key k ON k.id = s.key_id), x.hash, "
    "x.cas_block FROM sized z JOIN dedupd.xorb x ON x.id = z.id "
    "WHERE z.rank = 1 OR (z.rank <= $3 AND z.total <= $4) ORDER BY z.rank";

std::int64_t clamp64(std::uint64_t v) { return std::int64_t(std::min<std::uint64_t>(v, std::uint64_t(INT64_MAX))); }

}  // namespace

Result<std::optional<ShardXorbs>> Reader::shard_xorbs(const Hash& shard_hash, const Hash& first,
                                                      const ShardXorbBounds& bounds, std::uint64_t now,
                                                      Deadline deadline) {
  if (auto c = ensure_connected(deadline); !c) return c.error();
  auto rows = conn_->exec_until(kShardXorbs,
                                Params()
                                    .bytea(bytes_of(shard_hash))
                                    .bytea(bytes_of(first))
                                    .int8(clamp64(bounds.max_xorbs))
                                    .int8(clamp64(bounds.max_block_bytes))
                                    .int8(clamp64(now)),
                                deadline.at);
  if (!rows) {
    if (rows.error().rule != std::string(kRuleQuery)) drop_connection();
    return rows.error();
  }
  if (rows->size() == 0) return std::optional<ShardXorbs>{};
  ShardXorbs out;
  if (!rows->null(0, 0)) out.expiry = std::uint64_t(rows->int8(0, 0));
  if (!rows->null(0, 1)) {
    if (rows->bytes(0, 1).size() != 32) return make_error(kRuleProtocol, "a shard key of the wrong size");
    out.key = rows->hash(0, 1);
  }
  for (int r = 0; r < rows->size(); ++r) {
    auto block = rows->bytes(r, 3);
    out.xorbs.push_back({rows->hash(r, 2), std::vector<std::uint8_t>(block.begin(), block.end())});
  }
  return std::optional<ShardXorbs>(std::move(out));
}

}  // namespace dedupd::fleet
