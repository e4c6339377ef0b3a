// The tables of the index and the schema version that names their layout.
//
//   meta         name -> value: schema_version, next_xorb_id, shard counters
//   shards       shard hash -> ShardRecord (kept after removal, small)
//   shard_refs   shard hash -> ShardRefs: xorb ids and file hashes it brought
//   expiry       u64 BE instant -> dup shard hash (live shards that expire)
//   keys         chunk key -> dup shard hash (live keyed shards)
//   xorb_ids     xorb hash -> dup u32 BE xorb id (one per stored form)
//   xorbs        u32 BE xorb id -> xorb record (CAS block as stored)
//   xorb_shards  u32 BE xorb id -> dup shard hash (the refcount is the count)
//   chunks       first hash byte -> dup 10-byte (hash bytes, xorb id, index)
//   chunks_recent  the same layout: where ingest puts new entries. Merged
//                into `chunks` a few key bytes per transaction once it
//                exceeds 1/16 of `chunks`, a slice of time after each
//                ingest until it is empty (see merge.cpp): inserting at
//                random into the big table would copy most of its pages in
//                every transaction, and LMDB keeps the old copies until two
//                commits later, which is what the file size pays for. A key
//                that a step brings 1/64 more entries is written afresh in
//                order, its pages full.
//   files        file hash -> file record (file-info block as stored)
//   file_shards  file hash -> dup shard hash
//   sha256       sha256 -> dup file hash
//   sources      blake3(path) -> Source (accepted or rejected file)
//   outbox       u64 BE sequence -> what the fleet must still learn (outbox.hpp)
//   parked       u64 BE sequence -> an outbox entry that could not be
//                published, with why (outbox.hpp); back into the outbox on
//                retry
//   expired_forms  shard hash -> the chunk forms an expired shard held
//                (records.hpp), kept a while so a query can say "expired"
//
// Refcounts are not numbers that could drift: an entry lives while its
// (entry, shard) duplicates exist, and the last one removed takes it along.
#pragma once

#include <lmdb.h>

#include <cstdint>

#include "index/types.hpp"

namespace dedupd::index::schema {

// 1: first layout (records.hpp).
// 2: + outbox.
// 3: + parked; shard_refs say each file's flags as its shard had them.
// 4: + expired_forms.
// 5: chunk entries of 11 bytes (four hash bytes), not 12 (five).
// 6: chunk entries of 10 bytes (three hash bytes); xorb records may be dense
//    (records.hpp), which older code cannot read.
// 7: a shard record may say its CAS and that it is set aside (records.hpp),
//    which older code cannot read.
// Versions 1 to 6 are upgraded in place when opened: the new tables are
// created in one transaction; refs written before 3 stay as they are
// (records.hpp); shards that expired before 4 have no forms kept; the chunk
// entries are rewritten a few key bytes a transaction (upgrade.hpp), and the
// version is written last, so a kill in between is taken up at the next open.
inline constexpr std::uint32_t kVersion = 7;
inline constexpr unsigned kMaxDbs = 20;

struct Dbs {
  MDB_dbi meta, shards, shard_refs, expiry, keys, xorb_ids, xorbs, xorb_shards, chunks, chunks_recent, files,
      file_shards, sha256, sources, outbox, parked, expired_forms;
  // The layout the file has: kVersion, or an older one in a read-only
  // environment (whose upgrade waits for a writer; the tables it lacks,
  // `outbox` before 2, `parked` before 3 and `expired_forms` before 4, are
  // not set).
  std::uint32_t version = kVersion;
};

// meta counters
inline constexpr const char* kNextXorbId = "next_xorb_id";
inline constexpr const char* kCountLive = "count.live";
inline constexpr const char* kCountExpired = "count.expired";
inline constexpr const char* kCountRemoved = "count.removed";
inline constexpr const char* kCountRejected = "count.rejected";
inline constexpr const char* kSchemaVersion = "schema_version";

// The key of the meta value `name`.
MDB_val meta_key(const char* name);
// Reads a u64 meta value (0 when absent).
int get_u64(MDB_txn* txn, MDB_dbi meta, const char* name, std::uint64_t& out);
int put_u64(MDB_txn* txn, MDB_dbi meta, const char* name, std::uint64_t v);
// Adds delta (may be negative) to a meta counter.
int add_u64(MDB_txn* txn, MDB_dbi meta, const char* name, std::int64_t delta);
const char* counter_of(ShardState s);

}  // namespace dedupd::index::schema
