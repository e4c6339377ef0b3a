#include "fleet/reader_sql.hpp"

#include "fleet/partitions.hpp"
#include "fleet/sql.hpp"

namespace dedupd::fleet::reader_sql {

// The live keys in the lookup's own snapshot, in the three columns of its
// hit rows (prefix, place, text), the prefix NULL: one row per key (its id;
// "hex-key generation", the generation the xmin of its row), one for the
// raw forms (id 0, the key of zeros, the raw generation), and one row with
// the list "hex,hex|epoch" (the id NULL too). Hit rows carry no
// column for them: each column a hit row has costs libpq and the Reader
// on every hit, and hits are most of an answer's rows. The epoch names the server (its start time) and the
// files of the tables the xorb cache is filled from: a restore (pg_restore
// --clean, a new schema), a TRUNCATE or a VACUUM FULL makes them anew, and
// row ids may then be handed out again, so what the cache holds from before
// is not used (a new era, fleet/xorb_cache.hpp).
// Last, the raw forms' row: id 0, the key of zeros, the raw generation.
const char* const kRawGeneration =
    "(SELECT 'raw ' || coalesce(md5(string_agg(p.host_id::text || '.' || p.xmin::text, ',' ORDER BY p.host_id)), '') "
    "FROM dedupd.raw_publish p)";

const std::string& key_rows_sql() {
  static const std::string sql =
      "SELECT NULL::int8, k.id::int8, encode(k.key, 'hex') || ' ' || k.xmin::text FROM dedupd.chunk_key k "
      "WHERE k.shards > 0 "
      "UNION ALL SELECT NULL, 0, '" +
      std::string(64, '0') + " ' || " + kRawGeneration +
      " "
      "UNION ALL SELECT NULL, NULL, "
      "(SELECT coalesce(string_agg(encode(key, 'hex'), ',' ORDER BY key), '') FROM dedupd.chunk_key "
      "WHERE shards > 0) || '|' || "
      "concat_ws('.', pg_postmaster_start_time(), pg_relation_filenode(to_regclass('dedupd.xorb')), "
      "pg_relation_filenode(to_regclass('dedupd.shard')), pg_relation_filenode(to_regclass('dedupd.hold')))";
  return sql;
}

// The probe: the chunk rows of every form asked, one "= ANY" per partition,
// a row per hit: its prefix and (xorb id << 32 | chunk index), index-only
// (schema 3's covering index); `with_entries`, also what the hit answers
// from its CAS entry (schema 6's hash_check, byte_start, unpacked_bytes,
// flags), from the heap row. Then the key rows. (Each partition's hits as
// two arrays in one row cost the server 5 % more than these rows, libpq's
// reading of them included: 343 k against 363 k hashes/s at 1 M entries,
// 261 k against 275 k at 10 M, both a bare "= ANY" at 0.9-0.95x.)
const std::string& lookup_sql(bool with_entries) {
  auto make = [](bool entries) {
    std::string hit;
    for (int i = 0; i < schema::kChunkPartitions; ++i) {
      if (i) hit += " UNION ALL ";
      hit += "SELECT prefix, (xorb_id::int8 << 32) | chunk_index";
      hit += i == 0 ? ", NULL::text" : ", NULL";
      if (entries) hit += ", hash_check, byte_start, unpacked_bytes, flags";
      hit += " FROM dedupd.chunk WHERE prefix = ANY ($" + std::to_string(i + 1) + "::int8[])";
      if (i > 0) hit += " AND prefix >= " + schema::partition_lower(i);
      if (i + 1 < schema::kChunkPartitions) hit += " AND prefix < " + schema::partition_upper(i);
    }
    if (!entries) return hit + " UNION ALL " + key_rows_sql();
    return hit + " UNION ALL SELECT k.*, NULL, NULL, NULL, NULL FROM (" + key_rows_sql() + ") AS k";
  };
  static const std::string index_only = make(false), entries = make(true);
  return with_entries ? entries : index_only;
}

// What the hits of a probe need that the xorb cache lacks, in one
// statement. Per xorb ($1, with the hits that count for it $2 and whether its
// holders are wanted $3, 1 or 0): its hash, key and chunk count; its whole CAS block
// when it was hit at least once per kWholeBlockBytesPerHit bytes of it, the
// most hit first while their blocks fit in $4 bytes (the cache's budget:
// when a stream spreads over thousands of xorbs their hits cross the bar
// together, and one fill brought hundreds of MB the cache could not keep);
// its holders. Then the chunk entries ($5[i], $6[i]) of the xorbs not
// fetched whole, sliced out of their blocks (the last column not NULL):
// also of xorbs not in $1, whose cached meta and holders still serve and
// whose hits are too few for the whole block.
const std::string& fill_sql() {
  static const std::string sql =
      "WITH e AS (SELECT u.id, u.holders, u.hits, x.chunks, 48 * (x.chunks::int8 + 1) AS bytes, "
      "48 * (x.chunks::int8 + 1) <= least(u.hits::int8 * " +
      std::to_string(kWholeBlockBytesPerHit) +
      ", $4::int8) AS eligible "
      "FROM unnest($1::int4[], $2::int4[], $3::int4[]) AS u (id, hits, holders) JOIN dedupd.xorb x ON x.id = u.id), "
      "w AS (SELECT id, holders, chunks, eligible AND sum(CASE WHEN eligible THEN bytes ELSE 0 END) "
      "OVER (ORDER BY eligible DESC, hits DESC, id ROWS UNBOUNDED PRECEDING) <= $4::int8 AS whole FROM e) "
      "SELECT w.id, x.hash, k.key, w.chunks, CASE WHEN w.whole THEN x.cas_block END, "
      "CASE WHEN w.holders <> 0 THEN " +
      sql::shards_of("w.id", "xorb_ids") +
      " END, NULL::int4 "
      "FROM w JOIN dedupd.xorb x ON x.id = w.id LEFT JOIN dedupd.chunk_key k ON k.id = x.key_id "
      "UNION ALL SELECT s.xorb_id, NULL, NULL, NULL, substring(x.cas_block FROM 48 * (s.chunk_index + 1) + 1 FOR 48), "
      "NULL, s.chunk_index FROM unnest($5::int4[], $6::int4[]) AS s (xorb_id, chunk_index) "
      "JOIN dedupd.xorb x ON x.id = s.xorb_id LEFT JOIN w ON w.id = s.xorb_id WHERE NOT coalesce(w.whole, false)";
  return sql;
}

// Reads the key rows of key_rows_sql() out of an answer: the list text, the epoch,
// and each key's id and generation. Hit rows (prefix not NULL) are skipped.
Result<KeyRows> read_key_rows(const detail::Rows& rows, std::vector<detail::LiveKey>& live) {
  live.clear();
  std::optional<KeyRows> list;
  for (int r = 0; r < rows.size(); ++r) {
    if (!rows.null(r, 0)) continue;
    if (rows.null(r, 2)) return make_error(kRuleProtocol, "lookup answer with an empty key row");
    const std::string_view text = rows.text(r, 2);
    if (rows.null(r, 1)) {
      const auto bar = text.find('|');
      if (bar == std::string_view::npos) return make_error(kRuleProtocol, "lookup answer with a malformed key list");
      list = KeyRows{text.substr(0, bar), text.substr(bar + 1)};
      continue;
    }
    const auto space = text.find(' ');
    auto key = Hash::parse_hex_bytes(text.substr(0, space));
    if (space == std::string_view::npos || !key || rows.bytes(r, 1).size() != 8)
      return make_error(kRuleProtocol, "lookup answer with a malformed key row");
    live.push_back({std::int32_t(rows.int8(r, 1)), *key, std::string(text.substr(space + 1))});
  }
  if (!list) return make_error(kRuleProtocol, "lookup answer without the key list");
  return *list;
}

void note_epoch(XorbCache& cache, std::string& known, std::uint32_t& era, std::string_view epoch) {
  if (known != epoch) known = std::string(epoch);
  era = cache.era(known);
}

}  // namespace dedupd::fleet::reader_sql
