// What expired shards held (records.hpp, expired_forms): written when a
// shard expires or arrives expired, read only to explain a chunk query that
// found nothing, dropped a while later.
#include <algorithm>

#include "index/impl.hpp"
#include "index/index.hpp"
#include "shard/keys.hpp"

namespace dedupd::index {

using namespace records;
using detail::Cursor;

namespace detail {

namespace {

// Long enough to answer "why is it gone?" for the weeks a user might ask;
// short enough that a host taking many keyed replies a day does not keep
// their forms for ever (8 bytes a chunk).
constexpr std::uint64_t kExpiredFormsKeptSeconds = 30ull * 24 * 3600;

int put_forms(OpenIndex& im, MDB_txn* txn, const Hash& shard_hash, ExpiredForms forms) {
  Bytes b = encode(std::move(forms));
  MDB_val k = val(shard_hash), v = val(b);
  return mdb_put(txn, im.dbs.expired_forms, &k, &v, 0);
}

ExpiredForms head_of(const ShardRecord& rec, std::uint64_t now) {
  ExpiredForms f;
  f.keyed = rec.keyed;
  f.key = rec.key;
  f.expiry = rec.expiry;
  f.recorded_at = now;
  return f;
}

}  // namespace

TxnResult keep_expired_forms(OpenIndex& im, MDB_txn* txn, const Hash& shard_hash, const ShardRecord& rec,
                             const ShardRefs& refs, std::uint64_t now) {
  ExpiredForms f = head_of(rec, now);
  f.forms.reserve(rec.chunks);
  for (XorbId id : refs.xorbs) {
    IdKey ik(id);
    MDB_val xk = ik.mdb(), xv;
    int rc = mdb_get(txn, im.dbs.xorbs, &xk, &xv);
    if (rc == MDB_NOTFOUND) continue;  // damage the invariant checker reports; the hint is partial
    if (rc) return rc;
    auto x = XorbRecordView::decode(xv);
    if (!x) return corrupt("xorb record " + std::to_string(id) + " does not decode");
    for (std::uint32_t i = 0; i < x->num_chunks(); ++i) f.forms.push_back(expired_form(x->chunk_hash_bytes(i)));
  }
  return put_forms(im, txn, shard_hash, std::move(f));
}

TxnResult keep_expired_forms(OpenIndex& im, MDB_txn* txn, const Hash& shard_hash, const ShardRecord& rec,
                             const shard::ShardView& view, std::uint64_t now) {
  ExpiredForms f = head_of(rec, now);
  f.forms.reserve(view.stats().chunks);
  for (const shard::XorbBlock& xb : view.xorbs())
    for (std::uint32_t i = 0; i < xb.num_chunks(); ++i) f.forms.push_back(expired_form(xb.chunk_hash_bytes(i)));
  return put_forms(im, txn, shard_hash, std::move(f));
}

int forget_expired_forms(OpenIndex& im, MDB_txn* txn, const Hash& shard_hash) {
  MDB_val k = val(shard_hash);
  int rc = mdb_del(txn, im.dbs.expired_forms, &k, nullptr);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

TxnResult drop_old_expired_forms(OpenIndex& im, MDB_txn* txn, std::uint64_t now, std::size_t& dropped) {
  Cursor c;
  if (int rc = c.open(txn, im.dbs.expired_forms)) return rc;
  MDB_val k, v;
  for (int rc = c.move(&k, &v, MDB_FIRST); rc != MDB_NOTFOUND; rc = c.move(&k, &v, MDB_NEXT)) {
    if (rc) return rc;
    auto f = ExpiredFormsView::decode(v);
    // A record that does not decode is dropped too: it only ever served a hint.
    if (f && f->recorded_at() + kExpiredFormsKeptSeconds > now) continue;
    if ((rc = mdb_cursor_del(c.get(), 0))) return rc;
    ++dropped;
  }
  return 0;
}

}  // namespace detail

Result<std::vector<ShardInfo>> Index::expired_holders(const Hash& raw_chunk_hash) const {
  std::vector<ShardInfo> out;
  // An index of an older schema opened read-only has no such table.
  if (impl_->dbs.version < 4) return out;
  auto txn = impl_->env->begin_read();
  if (!txn) return txn.error();
  Cursor c;
  if (int rc = c.open(txn->get(), impl_->dbs.expired_forms)) return lmdb::error_of(rc, "reading expired shards");
  MDB_val k, v;
  for (int rc = c.move(&k, &v, MDB_FIRST); rc != MDB_NOTFOUND; rc = c.move(&k, &v, MDB_NEXT)) {
    if (rc) return lmdb::error_of(rc, "reading expired shards");
    auto f = ExpiredFormsView::decode(v);
    if (!f || k.mv_size != 32) continue;
    const Hash stored = f->keyed() ? shard::keyed_chunk_hash(f->key(), raw_chunk_hash) : raw_chunk_hash;
    if (!f->holds(stored.data())) continue;
    MDB_val sv;
    if (mdb_get(txn->get(), impl_->dbs.shards, &k, &sv) != 0) continue;
    auto rec = decode_shard(sv);
    if (!rec || rec->state != ShardState::expired) continue;
    out.push_back(to_info(Hash::from_bytes(span_of(k)), *rec));
  }
  return out;
}

}  // namespace dedupd::index
