// The migrations themselves. Each entry upgrades from version i to i + 1 and
// never changes once released: a new layout is a new entry.
#include "fleet/migrations.hpp"

#include <cstdio>
#include <string>

#include "fleet/partitions.hpp"

namespace dedupd::fleet::schema {
namespace {

// Version 1. Sizes are chosen for <= 160 bytes per chunk entry (tables +
// indexes): a chunk row is (8-byte prefix, int4 xorb id, int4 chunk index),
// 40 bytes with its tuple header, and its index entry keys the prefix only;
// the 48-byte chunk entries live once per xorb in its CAS block, stored
// uncompressed (EXTERNAL) so a lookup slices out one entry without reading
// the block. Ids are int4: 2^31 xorb and file forms ever published.
const char* const kV1Tables = R"sql(
CREATE TABLE dedupd.host (
  id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name text NOT NULL UNIQUE,
  last_contact timestamptz
);
-- The keys keyed shards store chunk hashes under. A key is live while a
-- shard uses it; lookups hash each query under every live key.
CREATE TABLE dedupd.chunk_key (
  id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  key bytea NOT NULL UNIQUE CHECK (length(key) = 32),
  shards integer NOT NULL DEFAULT 0
);
CREATE TABLE dedupd.xorb (
  id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  hash bytea NOT NULL CHECK (length(hash) = 32),
  key_id integer NOT NULL DEFAULT 0,  -- 0: chunk hashes stored raw
  chunks integer NOT NULL,
  refs integer NOT NULL,              -- fleet shards that list this form
  cas_block bytea NOT NULL,
  UNIQUE (hash, key_id)
);
ALTER TABLE dedupd.xorb ALTER COLUMN cas_block SET STORAGE EXTERNAL;
CREATE TABLE dedupd.file (
  id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  hash bytea NOT NULL UNIQUE CHECK (length(hash) = 32),
  sha256 bytea,
  refs integer NOT NULL,
  block bytea NOT NULL
);
CREATE INDEX file_sha256 ON dedupd.file (sha256) WHERE sha256 IS NOT NULL;
-- One row per fleet shard; what it contributed is listed here, per xorb and
-- per file, not per chunk.
CREATE TABLE dedupd.shard (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  hash bytea NOT NULL UNIQUE CHECK (length(hash) = 32),
  key_id integer REFERENCES dedupd.chunk_key (id),
  expiry bigint,  -- shard_key_expiry, unix seconds; NULL: never
  published_at timestamptz NOT NULL DEFAULT now(),
  chunks bigint NOT NULL,
  xorb_ids integer[] NOT NULL,
  file_ids integer[] NOT NULL
);
CREATE INDEX shard_expiry ON dedupd.shard (expiry) WHERE expiry IS NOT NULL;
CREATE INDEX shard_xorbs ON dedupd.shard USING gin (xorb_ids);
CREATE INDEX shard_files ON dedupd.shard USING gin (file_ids);
CREATE TABLE dedupd.hold (
  shard_id bigint NOT NULL REFERENCES dedupd.shard (id) ON DELETE CASCADE,
  host_id integer NOT NULL REFERENCES dedupd.host (id) ON DELETE CASCADE,
  since timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (shard_id, host_id)
);
CREATE INDEX hold_host ON dedupd.hold (host_id);
CREATE TABLE dedupd.chunk (
  prefix bigint NOT NULL,
  xorb_id integer NOT NULL,
  chunk_index integer NOT NULL
) PARTITION BY RANGE (prefix);
)sql";

std::string v1() {
  std::string sql = kV1Tables;
  for (int i = 0; i < kChunkPartitions; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "dedupd.chunk_p%02d", i);
    sql += "CREATE TABLE " + std::string(name) + " PARTITION OF dedupd.chunk FOR VALUES FROM (" + partition_lower(i) +
           ") TO (" + partition_upper(i) + ");\n";
  }
  sql += "CREATE INDEX chunk_prefix ON dedupd.chunk (prefix);\n";
  return sql;
}

// Version 2: a fleet shard also lists its xorbs in the shard's own order.
// xorb_ids is in hash order (the order publishers lock shared rows in), but a
// global-dedup reply follows the shard's order (the chunk's xorb, then those
// after it, then those before), as the local one does. Shards published
// under version 1 keep their hash order, the only one known for them.
const char* const kV2 = R"sql(
ALTER TABLE dedupd.shard ADD COLUMN xorb_order integer[];
UPDATE dedupd.shard SET xorb_order = xorb_ids;
ALTER TABLE dedupd.shard ALTER COLUMN xorb_order SET NOT NULL;
)sql";

// Version 3: a hit's probe is index-only. The chunk table's index carries
// the xorb id and chunk index beside the prefix (a covering index, 8 bytes
// more an entry), so a lookup reads no heap page for a hit; the Reader takes
// everything else it answers (the xorb's hash and key, the 48-byte chunk
// entry, the holders) from its own caches or one more statement for what
// they lack (docs/FLEET.md, "Lookups"). An index-only scan reads the heap
// for pages the visibility map does not mark all-visible, and only vacuum
// marks them: the chunk partitions, insert-only between removals, are
// vacuumed after 2 % new rows (10,000 at least) instead of PostgreSQL's 20 %,
// so fresh entries do not stay heap fetches for long.
std::string v3() {
  std::string sql =
      "DROP INDEX dedupd.chunk_prefix;\n"
      "CREATE INDEX chunk_prefix_xorb ON dedupd.chunk (prefix) INCLUDE (xorb_id, chunk_index);\n";
  for (int i = 0; i < kChunkPartitions; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "dedupd.chunk_p%02d", i);
    sql += "ALTER TABLE " + std::string(name) +
           " SET (autovacuum_vacuum_insert_scale_factor = 0.02, autovacuum_vacuum_insert_threshold = 10000);\n";
  }
  return sql;
}

// Version 4: a fleet shard records the CASes that accepted it (issue 41),
// so a global-dedup query naming its CAS is answered from the fleet only by
// shards of that CAS. A set, not one URL: the same shard bytes accepted by
// two CASes (published by two hosts, or learned later by one) answer each.
// NULL is unknown, as for every shard published before this version; adding
// a nullable column rewrites no row.
const char* const kV4 = R"sql(
ALTER TABLE dedupd.shard ADD COLUMN cas text[];
)sql";

// Version 5: the raw generation (reader_sql::kRawGeneration) gets rows of
// its own, one per host that has published raw xorbs, updated last in each
// such publish. Under version 4 it was the host rows' xmin, which every
// heartbeat (each host, every 15 s) and every writer's connection moved as
// well: on a fleet of 15 hosts every Reader's raw filter went stale about
// once a second, each time costing a lookup asked twice and the raw forms
// asked until the filter was listed again. No row yet is the generation of
// a fleet that has published nothing raw since; a Reader's filter built
// under version 4 is of another generation and is listed again.
const char* const kV5 = R"sql(
CREATE TABLE dedupd.raw_publish (
  host_id integer PRIMARY KEY REFERENCES dedupd.host (id) ON DELETE CASCADE,
  at timestamptz NOT NULL DEFAULT now()
);
)sql";

// Version 6: a chunk row carries what a hit answers from its CAS entry
// (issue 42). A hit whose xorb's block the Reader does not cache (hits
// spread over thousands of xorbs) cost the probe plus a slice of the stored
// block, a TOAST index descent of its own, about 6.7 us at 10 M entries: as
// much as the probe. Now a probe can return it from the heap row its index
// entry points at, about 1.1 us more a hit (fleet/reader.cpp chooses which
// probe). The row takes the entry's byte range and flags, and bytes 8-11
// of the stored hash (`hash_check`, read big-endian) so that, with the
// prefix, 96 bits of it are compared before a hit is answered. 56 bytes a
// row with its header, 16 more than before: about 151 bytes an entry. The
// whole entries stay in the xorbs' CAS blocks, which answer a whole block
// (the cache, `xorb`, a global-dedup reply) at TOAST's speed: rebuilt from
// rows, a 3 MB reply's blocks took 66 ms against 4.5 ms.
// The rows are written again from the stored blocks, each block read once
// (a block is EXTERNAL: a slice a row would be a descent each), in xorb
// order; little-endian fields are put together from their bytes (the
// operators other than arithmetic share one precedence, hence the
// parentheses).
const char* const kV6Rows = R"sql(
INSERT INTO dedupd.chunk6 (prefix, xorb_id, chunk_index, hash_check, byte_start, unpacked_bytes, flags)
SELECT get_byte(x.b, o)::int8 | (get_byte(x.b, o + 1)::int8 << 8) | (get_byte(x.b, o + 2)::int8 << 16) |
       (get_byte(x.b, o + 3)::int8 << 24) | (get_byte(x.b, o + 4)::int8 << 32) | (get_byte(x.b, o + 5)::int8 << 40) |
       (get_byte(x.b, o + 6)::int8 << 48) | (get_byte(x.b, o + 7)::int8 << 56),
       x.id, i,
       ('x' || encode(substring(x.b FROM o + 9 FOR 4), 'hex'))::bit(32)::int4,
       get_byte(x.b, o + 32) | (get_byte(x.b, o + 33) << 8) | (get_byte(x.b, o + 34) << 16) | (get_byte(x.b, o + 35) << 24),
       get_byte(x.b, o + 36) | (get_byte(x.b, o + 37) << 8) | (get_byte(x.b, o + 38) << 16) | (get_byte(x.b, o + 39) << 24),
       get_byte(x.b, o + 40) | (get_byte(x.b, o + 41) << 8) | (get_byte(x.b, o + 42) << 16) | (get_byte(x.b, o + 43) << 24)
FROM (SELECT id, cas_block || '\x'::bytea AS b FROM dedupd.xorb ORDER BY id OFFSET 0) AS x,
     generate_series(0, length(x.b) / 48 - 2) AS i, LATERAL (SELECT 48 * (i + 1) AS o) AS at;
DROP TABLE dedupd.chunk;
ALTER TABLE dedupd.chunk6 RENAME TO chunk;
)sql";

std::string v6() {
  std::string sql =
      "CREATE TABLE dedupd.chunk6 (prefix bigint NOT NULL, xorb_id integer NOT NULL, chunk_index integer NOT NULL, "
      "hash_check integer NOT NULL, byte_start integer NOT NULL, unpacked_bytes integer NOT NULL, "
      "flags integer NOT NULL) PARTITION BY RANGE (prefix);\n";
  for (int i = 0; i < kChunkPartitions; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "chunk6_p%02d", i);
    sql += "CREATE TABLE dedupd." + std::string(name) + " PARTITION OF dedupd.chunk6 FOR VALUES FROM (" +
           partition_lower(i) + ") TO (" + partition_upper(i) + ");\n";
  }
  sql += kV6Rows;
  for (int i = 0; i < kChunkPartitions; ++i) {
    char built[32], name[32];
    std::snprintf(built, sizeof built, "chunk6_p%02d", i);
    std::snprintf(name, sizeof name, "chunk_p%02d", i);
    sql += "ALTER TABLE dedupd." + std::string(built) + " RENAME TO " + name + ";\n";
    sql += "ALTER TABLE dedupd." + std::string(name) +
           " SET (autovacuum_vacuum_insert_scale_factor = 0.02, autovacuum_vacuum_insert_threshold = 10000);\n";
  }
  return sql + "CREATE INDEX chunk_prefix_xorb ON dedupd.chunk (prefix) INCLUDE (xorb_id, chunk_index);\n";
}

// Version 7, the first additive one (issue 61): older dedupd keep working
// on it, so the fleet can be upgraded one host at a time.
// - schema_version.applied: how many migrations ran. `version` becomes the
//   oldest schema a dedupd must know to use the database (schema_version.cpp): an
//   additive migration leaves it, and dedupd 0.1.0, which reads only
//   `version` and wants exactly 6, goes on.
// - host.version: the dedupd release each host runs (NULL: before 0.2.0,
//   which did not say), for `dedupctl fleet status` during an upgrade.
// - set_aside: a shard a CAS refused an upload relying on (issue 58), for
//   that CAS only, by the host that saw the refusal. Every host leaves it
//   out of its global-dedup answers for that CAS, its own copy included;
//   deleting the row (a restore, or the bytes accepted again) brings it
//   back everywhere. Keyed by hash, not by the shard row: a host may set
//   aside a shard it has not published yet.
const char* const kV7 = R"sql(
ALTER TABLE dedupd.schema_version ADD COLUMN applied integer;
ALTER TABLE dedupd.host ADD COLUMN version text;
CREATE TABLE dedupd.set_aside (
  shard bytea NOT NULL CHECK (length(shard) = 32),
  cas text NOT NULL,
  host_id integer REFERENCES dedupd.host (id) ON DELETE SET NULL,
  reason text NOT NULL,
  at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (shard, cas)
);
)sql";

}  // namespace

const std::vector<Migration>& migrations() {
  static const std::vector<Migration> all = {
      {v1(), false}, {kV2, false}, {v3(), false}, {kV4, false}, {kV5, false}, {v6(), false}, {kV7, true},
  };
  return all;
}

}  // namespace dedupd::fleet::schema
