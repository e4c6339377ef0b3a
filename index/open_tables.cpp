#include "index/open_tables.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "index/records.hpp"
#include "index/upgrade.hpp"

namespace dedupd::index::schema {

namespace {

struct Table {
  const char* name;
  unsigned flags;
  MDB_dbi Dbs::*member;
};

constexpr unsigned kDup = MDB_DUPSORT | MDB_DUPFIXED;
const Table kTables[] = {
    {"meta", 0, &Dbs::meta},
    {"shards", 0, &Dbs::shards},
    {"shard_refs", 0, &Dbs::shard_refs},
    {"expiry", kDup, &Dbs::expiry},
    {"keys", kDup, &Dbs::keys},
    {"xorb_ids", kDup, &Dbs::xorb_ids},
    {"xorbs", 0, &Dbs::xorbs},
    {"xorb_shards", kDup, &Dbs::xorb_shards},
    {"chunks", kDup, &Dbs::chunks},
    {"chunks_recent", kDup, &Dbs::chunks_recent},
    {"files", 0, &Dbs::files},
    {"file_shards", kDup, &Dbs::file_shards},
    {"sha256", kDup, &Dbs::sha256},
    {"sources", 0, &Dbs::sources},
    {"outbox", 0, &Dbs::outbox},
    {"parked", 0, &Dbs::parked},
    {"expired_forms", 0, &Dbs::expired_forms},
};

// The version that added a table (1: the first layout).
std::uint32_t added_in(MDB_dbi Dbs::*member) {
  if (member == &Dbs::outbox) return 2;
  if (member == &Dbs::parked) return 3;
  if (member == &Dbs::expired_forms) return 4;
  return 1;
}

// The chunk tables are searched more than anything else, and LMDB's default
// comparison calls memcmp through the PLT for every 1-byte key and 10-byte
// duplicate it passes. These give exactly memcmp's order (so mdb_dump,
// mdb_load and every earlier index agree), inline. Other sizes (an older
// key's 11 or 12 bytes, read as it is) fall back to LMDB's rule all the same.
int compare_bytes(const MDB_val* a, const MDB_val* b) {
  std::size_t n = std::min(a->mv_size, b->mv_size);
  if (int d = std::memcmp(a->mv_data, b->mv_data, n)) return d;
  return a->mv_size < b->mv_size ? -1 : a->mv_size > b->mv_size;
}

int compare_chunk_key(const MDB_val* a, const MDB_val* b) {
  if (a->mv_size == 1 && b->mv_size == 1)
    return int(*static_cast<const std::uint8_t*>(a->mv_data)) - int(*static_cast<const std::uint8_t*>(b->mv_data));
  return compare_bytes(a, b);
}

int compare_chunk_value(const MDB_val* a, const MDB_val* b) {
  if (a->mv_size != records::kChunkValueBytes || b->mv_size != records::kChunkValueBytes) return compare_bytes(a, b);
  static_assert(records::kChunkValueBytes == 10);
  auto p = static_cast<const std::uint8_t*>(a->mv_data), q = static_cast<const std::uint8_t*>(b->mv_data);
  std::uint64_t x = records::load_be64(p), y = records::load_be64(q);
  if (x != y) return x < y ? -1 : 1;
  unsigned u = unsigned(p[8]) << 8 | p[9], v = unsigned(q[8]) << 8 | q[9];
  return u < v ? -1 : u > v;
}

// Why this code cannot use an index of schema `found`; empty when it can
// (the current version, or an older one, which it upgrades).
std::string version_problem(std::uint32_t found) {
  if (found >= 1 && found <= kVersion) return {};
  return "the index has schema version " + std::to_string(found) + ", this dedupd reads version " +
         std::to_string(kVersion) +
         (found > kVersion ? " (written by a newer dedupd: upgrade dedupd, or move the index away)"
                           : " (no upgrade path from it: move the index away and let dedupd "
                             "rebuild it from the shard files)");
}

// Reads the stored schema version into `found`; `why` says what makes the
// index unusable (no readable version, or one this code cannot use).
int read_version(MDB_txn* txn, MDB_dbi meta, std::uint32_t& found, std::string& why) {
  MDB_val k = meta_key(kSchemaVersion), v;
  int rc = mdb_get(txn, meta, &k, &v);
  if (rc == MDB_NOTFOUND || (rc == 0 && v.mv_size != 4)) {
    why = "the index has no readable schema version";
    return 0;
  }
  if (rc != 0) return rc;
  std::memcpy(&found, v.mv_data, 4);
  why = version_problem(found);
  return 0;
}

// The chunk tables' key and duplicate orders (a handle's comparators are
// set in every transaction that opens it).
int set_chunk_order(MDB_txn* txn, const Dbs& dbs) {
  int rc = 0;
  for (MDB_dbi d : {dbs.chunks, dbs.chunks_recent})
    if ((rc = mdb_set_compare(txn, d, &compare_chunk_key)) || (rc = mdb_set_dupsort(txn, d, &compare_chunk_value)))
      return rc;
  return 0;
}

int put_version(MDB_txn* txn, const Dbs& dbs) {
  std::uint32_t version = kVersion;
  MDB_val k = meta_key(kSchemaVersion), v = records::val(&version, 4);
  return mdb_put(txn, dbs.meta, &k, &v, 0);
}

// The tables as they are, in a read transaction: for --check, which must
// not write (not even the upgrade of an older schema).
Result<Dbs> open_read_only(lmdb::Env& env) {
  Dbs dbs{};
  auto not_ours = [&](const std::string& why) { return make_error(kRuleSchema, env.options().dir + ": " + why); };
  MDB_txn* txn = nullptr;
  if (int rc = mdb_txn_begin(env.raw(), nullptr, MDB_RDONLY, &txn))
    return lmdb::error_of(rc, "opening the index tables");
  // Aborted unless committed (a committed read transaction keeps its table handles).
  lmdb::WriteTxn guard(txn);
  int rc = mdb_dbi_open(txn, "meta", 0, &dbs.meta);
  if (rc == MDB_NOTFOUND) return not_ours("this LMDB environment is not a dedupd index (it has no schema version)");
  if (rc == MDB_INCOMPATIBLE) return not_ours("this LMDB environment is not a dedupd index (\"meta\" is not a table)");
  if (rc != 0) return lmdb::error_of(rc, "opening the index tables");
  std::string why;
  if ((rc = read_version(txn, dbs.meta, dbs.version, why))) return lmdb::error_of(rc, "reading the schema version");
  if (!why.empty()) return not_ours(why);
  for (const Table& t : kTables) {
    if (dbs.version < added_in(t.member)) continue;
    rc = mdb_dbi_open(txn, t.name, t.flags, &(dbs.*t.member));
    if (rc == MDB_NOTFOUND) return not_ours(std::string("table \"") + t.name + "\" is missing");
    if (rc == MDB_INCOMPATIBLE)
      return not_ours(std::string("table \"") + t.name + "\" has other flags than schema " +
                      std::to_string(dbs.version) + " has");
    if (rc != 0) return lmdb::error_of(rc, "opening the index tables");
  }
  if ((rc = set_chunk_order(txn, dbs))) return lmdb::error_of(rc, "opening the index tables");
  if ((rc = guard.commit())) return lmdb::error_of(rc, "opening the index tables");
  return dbs;
}

}  // namespace

Result<Dbs> open(lmdb::Env& env, const std::function<std::string(const std::string&)>& scope_of_path) {
  if (env.options().read_only) return open_read_only(env);
  Dbs dbs{};
  std::uint32_t found = kVersion;
  auto not_ours = [&](const std::string& why) { return make_error(kRuleSchema, env.options().dir + ": " + why); };
  auto status = env.write(
      [&](MDB_txn* txn) -> lmdb::TxnResult {
        MDB_dbi main;
        if (int rc = mdb_dbi_open(txn, nullptr, 0, &main)) return rc;
        int rc = mdb_dbi_open(txn, "meta", 0, &dbs.meta);
        bool fresh = false, older = false;
        if (rc == MDB_NOTFOUND) {
          MDB_stat st;
          if ((rc = mdb_stat(txn, main, &st))) return rc;
          if (st.ms_entries != 0) {
            return not_ours("this LMDB environment is not a dedupd index (it has no schema version)");
          }
          fresh = true;
        } else if (rc == MDB_INCOMPATIBLE) {
          return not_ours("this LMDB environment is not a dedupd index (\"meta\" is not a table)");
        } else if (rc != 0) {
          return rc;
        }
        if (!fresh) {
          // Check the version before touching anything: never create
          // tables inside an index this code does not understand.
          found = 0;
          std::string why;
          if ((rc = read_version(txn, dbs.meta, found, why))) return rc;
          if (!why.empty()) return not_ours(why);
          // An older layout this code can upgrade: the missing tables are
          // created below and the version written, in this transaction.
          older = found != kVersion;
        }
        for (const Table& t : kTables) {
          if ((rc = mdb_dbi_open(txn, t.name, t.flags | MDB_CREATE, &(dbs.*t.member)))) {
            if (rc == MDB_INCOMPATIBLE) {
              return not_ours(std::string("table \"") + t.name + "\" has other flags than schema " +
                              std::to_string(kVersion) + " expects");
            }
            return rc;
          }
        }
        if ((rc = set_chunk_order(txn, dbs))) return rc;
        if (!fresh && !older) return 0;
        // An older index is rewritten first, in transactions of their own
        // (the chunk entries before 6, the shards' CAS before 7): the
        // version says 7 only once all of them are.
        if (older) return 0;
        return put_version(txn, dbs);
      },
      "opening the index tables");
  if (!status) return status.error();
  if (found < kVersion) {
    if (found < 6)
      if (auto st = upgrade::chunk_entries_to_current(env, dbs); !st) return st.error();
    if (auto st = upgrade::shard_scopes_from_paths(env, dbs, scope_of_path); !st) return st.error();
    status =
        env.write([&](MDB_txn* txn) -> lmdb::TxnResult { return put_version(txn, dbs); }, "writing the schema version");
    if (!status) return status.error();
  }
  return dbs;
}

}  // namespace dedupd::index::schema
