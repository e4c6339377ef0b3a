// Source paths: which file held which shard, and which files were rejected,
// so the daemon neither rehashes known files nor retries bad ones until
// they change.
#include "index/impl.hpp"
#include "index/index.hpp"

namespace dedupd::index {

using namespace records;
using detail::Cursor;

Status Index::record_rejected(const RejectInfo& r) {
  if (r.path.empty()) return make_error(kRuleArgument, "a rejected file needs a path");
  Source s;
  s.rejected = true;
  s.path = r.path;
  s.size = r.size;
  s.mtime_ns = r.mtime_ns;
  s.hash = r.content_hash;
  s.offset = r.offset;
  s.recorded_at = r.recorded_at;
  s.rule = r.rule;
  s.message = r.message;
  std::lock_guard lock(impl_->write_mu);
  return impl_->env->write([&](MDB_txn* txn) { return detail::put_source(*impl_, txn, s); },
                           "recording a rejected file");
}

Status Index::forget_source(const std::string& path) {
  std::lock_guard lock(impl_->write_mu);
  return impl_->env->write(
      [&](MDB_txn* txn) -> lmdb::TxnResult {
        Hash k = source_key(path);
        MDB_val key = val(k), v;
        int rc = mdb_get(txn, impl_->dbs.sources, &key, &v);
        if (rc == MDB_NOTFOUND) return lmdb::TxnResult::rollback();
        if (rc) return rc;
        auto s = decode_source(v);
        bool rejected = s && s->rejected;
        if ((rc = mdb_del(txn, impl_->dbs.sources, &key, nullptr))) return rc;
        return rejected ? schema::add_u64(txn, impl_->dbs.meta, schema::kCountRejected, -1) : 0;
      },
      "forgetting a source");
}

Result<std::optional<SourceRecord>> Index::source(const std::string& path) const {
  auto txn = impl_->env->begin_read();
  if (!txn) return txn.error();
  Hash k = source_key(path);
  MDB_val key = val(k), v;
  int rc = mdb_get(txn->get(), impl_->dbs.sources, &key, &v);
  if (rc == MDB_NOTFOUND) return std::optional<SourceRecord>();
  if (rc) return lmdb::error_of(rc, "reading a source");
  auto s = decode_source(v);
  if (!s) return detail::corrupt("source record of " + path + " does not decode");
  SourceRecord out;
  out.path = s->path;
  out.size = s->size;
  out.mtime_ns = s->mtime_ns;
  out.rejected = s->rejected;
  if (!s->rejected && s->hash) out.shard = *s->hash;
  return std::optional<SourceRecord>(std::move(out));
}

Result<bool> Index::is_known_rejected(const std::string& path, std::uint64_t size, std::int64_t mtime_ns) const {
  auto s = source(path);
  if (!s) return s.error();
  return s->has_value() && (*s)->rejected && (*s)->size == size && (*s)->mtime_ns == mtime_ns;
}

Result<std::vector<RejectInfo>> Index::rejected() const {
  auto txn = impl_->env->begin_read();
  if (!txn) return txn.error();
  Cursor c;
  if (int rc = c.open(txn->get(), impl_->dbs.sources)) return lmdb::error_of(rc, "listing sources");
  std::vector<RejectInfo> out;
  MDB_val k, v;
  int rc;
  for (rc = c.move(&k, &v, MDB_FIRST); rc == 0; rc = c.move(&k, &v, MDB_NEXT)) {
    auto s = decode_source(v);
    if (!s) return detail::corrupt("a source record does not decode");
    if (!s->rejected) continue;
    RejectInfo r;
    r.path = s->path;
    r.size = s->size;
    r.mtime_ns = s->mtime_ns;
    r.content_hash = s->hash;
    r.rule = s->rule;
    r.offset = s->offset;
    r.message = s->message;
    r.recorded_at = s->recorded_at;
    out.push_back(std::move(r));
  }
  if (rc != MDB_NOTFOUND) return lmdb::error_of(rc, "listing sources");
  return out;
}

}  // namespace dedupd::index
