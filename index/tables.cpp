#include "index/tables.hpp"

#include <cstring>

#include "index/records.hpp"

namespace dedupd::index::schema {

MDB_val meta_key(const char* name) { return records::val(name, std::strlen(name)); }

const char* counter_of(ShardState s) {
  switch (s) {
    case ShardState::live:
      return kCountLive;
    case ShardState::expired:
      return kCountExpired;
    case ShardState::removed:
      return kCountRemoved;
  }
  return kCountLive;
}

int get_u64(MDB_txn* txn, MDB_dbi meta, const char* name, std::uint64_t& out) {
  MDB_val k = meta_key(name), v;
  int rc = mdb_get(txn, meta, &k, &v);
  out = 0;
  if (rc == MDB_NOTFOUND) return 0;
  if (rc != 0) return rc;
  if (v.mv_size != 8) return MDB_CORRUPTED;
  std::memcpy(&out, v.mv_data, 8);
  return 0;
}

int put_u64(MDB_txn* txn, MDB_dbi meta, const char* name, std::uint64_t value) {
  MDB_val k = meta_key(name), v = records::val(&value, 8);
  return mdb_put(txn, meta, &k, &v, 0);
}

int add_u64(MDB_txn* txn, MDB_dbi meta, const char* name, std::int64_t delta) {
  std::uint64_t cur;
  if (int rc = get_u64(txn, meta, name, cur)) return rc;
  return put_u64(txn, meta, name, cur + std::uint64_t(delta));
}

}  // namespace dedupd::index::schema
