// Removal and expiry: undo one shard's contribution, touching only what its
// shard_refs record lists (cost in proportion to the shard, not the index).
#include <algorithm>
#include <cstring>
#include <span>

#include "index/impl.hpp"
#include "index/index.hpp"
#include "index/outbox_txn.hpp"
#include "index/tuning.hpp"

namespace dedupd::index {

using namespace records;
using detail::Cursor;

namespace detail {

std::size_t g_remove_run_entries = std::size_t(1) << 18;

namespace {

// Deletes the (key, dup) pair; a missing pair is tolerated (the invariant
// checker reports such damage; removal should still make progress).
int del_dup(MDB_txn* txn, MDB_dbi dbi, MDB_val key, MDB_val dup) {
  int rc = mdb_del(txn, dbi, &key, &dup);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

// True when `key` still has duplicates in `dbi`.
int has_dups(MDB_txn* txn, MDB_dbi dbi, MDB_val key, bool& any) {
  MDB_val v;
  int rc = mdb_get(txn, dbi, &key, &v);
  any = rc == 0;
  return rc == MDB_NOTFOUND ? 0 : rc;
}

// The chunk entries of dropped xorbs, deleted in sorted runs of at most
// g_remove_run_entries (plus one xorb): memory stays the same whatever the
// shard's size, and each run walks the chunk tables in key order.
class DeadEntries {
 public:
  DeadEntries(const OpenIndex& im, MDB_txn* txn) : im_(im), txn_(txn) {}

  int open() {
    int rc;
    MDB_stat st;
    if ((rc = mdb_stat(txn_, im_.dbs.chunks_recent, &st))) return rc;
    recent_empty_ = st.ms_entries == 0;
    if ((rc = recent_.open(txn_, im_.dbs.chunks_recent)) || (rc = main_.open(txn_, im_.dbs.chunks))) return rc;
    run_.reserve(g_remove_run_entries);
    return 0;
  }
  // Entries are copied in: a write may move the pages `rec` points into.
  int add(const XorbRecordView& rec, XorbId id) {
    for (std::uint32_t i = 0; i < rec.num_chunks(); ++i) run_.push_back(chunk_entry(rec.chunk_hash_bytes(i), id, i));
    return run_.size() >= g_remove_run_entries ? flush() : 0;
  }
  int flush() {
    std::sort(run_.begin(), run_.end());
    for (const auto& e : run_) {
      // Most entries sit in the main table; the recent one is only searched
      // when it holds anything.
      MDB_cursor* tables[2] = {recent_.get(), main_.get()};
      for (MDB_cursor* c : std::span(tables).subspan(recent_empty_ ? 1 : 0)) {
        MDB_val ck = e.mdb_key(), cv = e.mdb_value();
        int rc = mdb_cursor_get(c, &ck, &cv, MDB_GET_BOTH);
        if (rc == MDB_NOTFOUND) continue;
        if (rc || (rc = mdb_cursor_del(c, 0))) return rc;
        break;
      }
    }
    run_.clear();
    return 0;
  }

 private:
  const OpenIndex& im_;
  MDB_txn* txn_;
  Cursor recent_, main_;
  bool recent_empty_ = false;
  std::vector<ChunkEntryKey> run_;
};

// Deletes xorb `id` (its last shard is gone): its chunk entries, its id
// mapping and its record.
TxnResult drop_xorb(OpenIndex& im, MDB_txn* txn, XorbId id, DeadEntries& dead) {
  IdKey ik(id);
  MDB_val xk = ik.mdb(), xv;
  int rc = mdb_get(txn, im.dbs.xorbs, &xk, &xv);
  if (rc == MDB_NOTFOUND) return 0;
  if (rc) return rc;
  auto rec = XorbRecordView::decode(xv);
  if (!rec) return corrupt("xorb record " + std::to_string(id) + " does not decode");
  Hash xh = rec->xorb_hash();
  if ((rc = dead.add(*rec, id))) return rc;
  // `rec` may point into moved pages from here on.
  if ((rc = del_dup(txn, im.dbs.xorb_ids, val(xh), ik.mdb()))) return rc;
  rc = mdb_del(txn, im.dbs.xorbs, &xk, nullptr);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

TxnResult drop_file_ref(OpenIndex& im, MDB_txn* txn, const Hash& fh, const Hash& shard_hash) {
  int rc = del_dup(txn, im.dbs.file_shards, val(fh), val(shard_hash));
  if (rc) return rc;
  bool any;
  if ((rc = has_dups(txn, im.dbs.file_shards, val(fh), any)) || any) return rc;
  MDB_val k = val(fh), v;
  rc = mdb_get(txn, im.dbs.files, &k, &v);
  if (rc == MDB_NOTFOUND) return 0;
  if (rc) return rc;
  auto block = decode_file(v);
  if (!block) return corrupt("file record " + fh.to_string() + " does not decode");
  if (auto sha = block->sha256())
    if ((rc = del_dup(txn, im.dbs.sha256, val(*sha), val(fh)))) return rc;
  rc = mdb_del(txn, im.dbs.files, &k, nullptr);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

}  // namespace

TxnResult remove_in_txn(OpenIndex& im, MDB_txn* txn, const Hash& h, ShardState new_state, std::uint64_t now,
                        RemoveResult& out) {
  const schema::Dbs& d = im.dbs;
  out = RemoveResult{};
  MDB_val k = val(h), v;
  int rc = mdb_get(txn, d.shards, &k, &v);
  if (rc == MDB_NOTFOUND) {
    out.outcome = RemoveOutcome::not_found;
    return 0;
  }
  if (rc) return rc;
  auto rec = decode_shard(v);
  if (!rec) return corrupt("shard record " + h.to_string() + " does not decode");
  if (rec->state != ShardState::live) {
    out.outcome = RemoveOutcome::not_live;
    out.shard = to_info(h, *rec);
    return 0;
  }
  ShardRefs refs;
  rc = mdb_get(txn, d.shard_refs, &k, &v);
  if (rc == 0) {
    auto r = decode_refs(v);
    if (!r) return corrupt("shard_refs of " + h.to_string() + " does not decode");
    refs = std::move(*r);
  } else if (rc != MDB_NOTFOUND) {
    return rc;
  }

  // Before the xorbs go: what the shard held, for a query that asks later.
  if (new_state == ShardState::expired)
    if (auto r = keep_expired_forms(im, txn, h, *rec, refs, now); !r.proceed()) return r;
  {
    DeadEntries dead(im, txn);
    if ((rc = dead.open())) return rc;
    for (XorbId id : refs.xorbs) {
      IdKey ik(id);
      if ((rc = del_dup(txn, d.xorb_shards, ik.mdb(), val(h)))) return rc;
      bool any;
      if ((rc = has_dups(txn, d.xorb_shards, ik.mdb(), any))) return rc;
      if (any) continue;
      if (auto r = drop_xorb(im, txn, id, dead); !r.proceed()) return r;
    }
    if ((rc = dead.flush())) return rc;
  }
  for (const Hash& fh : refs.files)
    if (auto r = drop_file_ref(im, txn, fh, h); !r.proceed()) return r;

  MDB_val sv = val(h);
  if (rec->keyed && (rc = del_dup(txn, d.keys, val(rec->key), sv))) return rc;
  if (rec->has_expiry) {
    ExpiryKey ek(rec->expiry);
    if ((rc = del_dup(txn, d.expiry, ek.mdb(), sv))) return rc;
  }
  rc = mdb_del(txn, d.shard_refs, &k, nullptr);
  if (rc && rc != MDB_NOTFOUND) return rc;

  rec->state = new_state;
  rec->ended_at = now;
  Bytes b = encode(*rec);
  MDB_val rv = val(b);
  if ((rc = mdb_put(txn, d.shards, &k, &rv, 0))) return rc;
  if ((rc = schema::add_u64(txn, d.meta, schema::kCountLive, -1)) ||
      (rc = schema::add_u64(txn, d.meta, schema::counter_of(new_state), 1)))
    return rc;
  out.outcome = RemoveOutcome::removed;
  out.shard = to_info(h, *rec);
  return outbox_enqueue(im, txn, OutboxOp::drop_hold, h, now);
}

}  // namespace detail

Result<RemoveResult> Index::remove(const Hash& shard_hash, std::uint64_t now) {
  std::lock_guard lock(impl_->write_mu);
  RemoveResult out;
  auto status = impl_->env->write(
      [&](MDB_txn* txn) { return detail::remove_in_txn(*impl_, txn, shard_hash, ShardState::removed, now, out); },
      "removing a shard");
  impl_->outbox_written(status.ok());
  if (!status) return status.error();
  return out;
}

namespace {
int del_expiry(MDB_txn* txn, MDB_dbi dbi, MDB_val key, MDB_val dup) {
  int rc = mdb_del(txn, dbi, &key, &dup);
  return rc == MDB_NOTFOUND ? 0 : rc;
}
}  // namespace

Result<std::vector<Hash>> Index::expire(std::uint64_t now) {
  std::lock_guard lock(impl_->write_mu);
  std::vector<Hash> expired;
  std::size_t dropped = 0;
  auto pruned = impl_->env->write(
      [&](MDB_txn* txn) -> detail::TxnResult {
        dropped = 0;
        auto r = detail::drop_old_expired_forms(*impl_, txn, now, dropped);
        if (!r.proceed()) return r;
        return dropped ? detail::TxnResult::commit() : detail::TxnResult::rollback();
      },
      "dropping the forms of long-expired shards");
  if (!pruned) return pruned.error();
  // One transaction per shard: a large backlog never makes one huge
  // transaction, and each shard's removal is durable on its own.
  for (;;) {
    std::optional<Hash> victim;
    RemoveResult out;
    auto status = impl_->env->write(
        [&](MDB_txn* txn) -> detail::TxnResult {
          victim.reset();
          Cursor c;
          if (int rc = c.open(txn, impl_->dbs.expiry)) return rc;
          MDB_val k, v;
          int rc = c.move(&k, &v, MDB_FIRST);
          if (rc == MDB_NOTFOUND) return detail::TxnResult::rollback();
          if (rc) return rc;
          if (k.mv_size != 8 || v.mv_size != 32) return detail::corrupt("expiry table entry of the wrong size");
          std::uint64_t when = load_be64(static_cast<const std::uint8_t*>(k.mv_data));
          if (when > now) return detail::TxnResult::rollback();
          victim = Hash::from_bytes(span_of(v));
          auto removed = detail::remove_in_txn(*impl_, txn, *victim, ShardState::expired, now, out);
          if (!removed.proceed() || out.outcome == RemoveOutcome::removed) return removed;
          // An expiry entry for a shard that is not live: damage; drop it
          // so expiry cannot loop on it.
          ExpiryKey ek(when);
          return del_expiry(txn, impl_->dbs.expiry, ek.mdb(), val(*victim));
        },
        "expiring a shard");
    impl_->outbox_written(status.ok());
    if (!status) return status.error();
    if (!victim) break;
    if (out.outcome == RemoveOutcome::removed) expired.push_back(*victim);
  }
  return expired;
}

}  // namespace dedupd::index
