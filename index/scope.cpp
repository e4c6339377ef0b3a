// What a shard's scope says of its answers (schema 7): setting a shard aside
// from global-dedup answers and bringing it back. Its entries stay: a set-aside
// shard still answers plain lookups, it only stops telling Xet clients to
// skip uploading xorbs its CAS may no longer hold.
#include <lmdb.h>

#include "index/impl.hpp"
#include "index/index.hpp"
#include "index/records.hpp"
#include "index/upgrade.hpp"

namespace dedupd::index {

using namespace records;

namespace {

// Rewrites a shard's record with `change`; nullopt when the shard is unknown.
Result<std::optional<ShardInfo>> rewrite_record(OpenIndex& im, const Hash& shard_hash,
                                                const std::function<void(ShardRecord&)>& change, const char* what) {
  std::optional<ShardInfo> out;
  std::lock_guard lock(im.write_mu);
  auto st = im.env->write(
      [&](MDB_txn* txn) -> lmdb::TxnResult {
        out.reset();
        MDB_val k = val(shard_hash), v;
        int rc = mdb_get(txn, im.dbs.shards, &k, &v);
        if (rc == MDB_NOTFOUND) return lmdb::TxnResult::rollback();
        if (rc) return rc;
        auto rec = decode_shard(v);
        if (!rec) return detail::corrupt("shard record " + shard_hash.to_string() + " does not decode");
        change(*rec);
        Bytes b = encode(*rec);
        MDB_val nv = val(b);
        if ((rc = mdb_put(txn, im.dbs.shards, &k, &nv, 0))) return rc;
        out = to_info(shard_hash, *rec);
        return 0;
      },
      what);
  if (!st) return st.error();
  return out;
}

}  // namespace

Result<std::optional<ShardInfo>> Index::set_aside(const Hash& shard_hash, const std::string& reason,
                                                  std::uint64_t now) {
  return rewrite_record(
      *impl_, shard_hash,
      [&](ShardRecord& r) {
        if (r.set_aside) return;  // the first reason stays: it is what happened
        r.set_aside = true;
        r.set_aside_at = now;
        r.set_aside_reason = reason;
      },
      "setting a shard aside");
}

Status Index::scope_unknown_shards(const std::function<std::string(const std::string& path)>& scope_of_path) {
  std::lock_guard lock(impl_->write_mu);
  return upgrade::shard_scopes_from_paths(*impl_->env, impl_->dbs, scope_of_path);
}

Result<std::optional<ShardInfo>> Index::restore(const Hash& shard_hash) {
  return rewrite_record(
      *impl_, shard_hash,
      [](ShardRecord& r) {
        r.set_aside = false;
        r.set_aside_at = 0;
        r.set_aside_reason.clear();
      },
      "restoring a set-aside shard");
}

}  // namespace dedupd::index
