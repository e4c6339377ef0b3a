// Removal and expiry: undo one shard's contribution, touching only what its
// shard_refs record lists (cost in proportion to the shard, not the index).
#include <algorithm>
#include <cstring>

#include "index/impl.hpp"
#include "index/outbox_txn.hpp"

namespace dedupd::index {

using namespace records;
using detail::Cursor;
using detail::WriteError;

namespace detail {

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

// Deletes xorb `id` (its last shard is gone): its chunk entries (collected
// into `dead` for one sorted pass), its id mapping and its record.
int drop_xorb(Index::Impl& im, MDB_txn* txn, XorbId id, std::vector<ChunkEntryKey>& dead, WriteError& werr) {
  IdKey ik(id);
  MDB_val xk = ik.mdb(), xv;
  int rc = mdb_get(txn, im.dbs.xorbs, &xk, &xv);
  if (rc == MDB_NOTFOUND) return 0;
  if (rc) return rc;
  auto rec = XorbRecordView::decode(xv);
  if (!rec) return werr.fail(kRuleCorrupt, "xorb record " + std::to_string(id) + " does not decode");
  // Copy out before writing: a write may move the pages xv points into.
  for (std::uint32_t i = 0; i < rec->num_chunks(); ++i) dead.push_back(chunk_entry(rec->chunk_hash_bytes(i), id, i));
  Hash xh = rec->xorb_hash();
  if ((rc = del_dup(txn, im.dbs.xorb_ids, val(xh), ik.mdb()))) return rc;
  rc = mdb_del(txn, im.dbs.xorbs, &xk, nullptr);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

int drop_file_ref(Index::Impl& im, MDB_txn* txn, const Hash& fh, const Hash& shard_hash, WriteError& werr) {
  int rc = del_dup(txn, im.dbs.file_shards, val(fh), val(shard_hash));
  if (rc) return rc;
  bool any;
  if ((rc = has_dups(txn, im.dbs.file_shards, val(fh), any)) || any) return rc;
  MDB_val k = val(fh), v;
  rc = mdb_get(txn, im.dbs.files, &k, &v);
  if (rc == MDB_NOTFOUND) return 0;
  if (rc) return rc;
  auto block = decode_file(v);
  if (!block) return werr.fail(kRuleCorrupt, "file record " + fh.to_string() + " does not decode");
  if (auto sha = block->sha256())
    if ((rc = del_dup(txn, im.dbs.sha256, val(*sha), val(fh)))) return rc;
  rc = mdb_del(txn, im.dbs.files, &k, nullptr);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

}  // namespace

int remove_in_txn(Index::Impl& im, MDB_txn* txn, const Hash& h, ShardState new_state, std::uint64_t now,
                  RemoveResult& out, WriteError& werr) {
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
  if (!rec) return werr.fail(kRuleCorrupt, "shard record " + h.to_string() + " does not decode");
  if (rec->state != ShardState::live) {
    out.outcome = RemoveOutcome::not_live;
    out.shard = to_info(h, *rec);
    return 0;
  }
  ShardRefs refs;
  rc = mdb_get(txn, d.shard_refs, &k, &v);
  if (rc == 0) {
    auto r = decode_refs(v);
    if (!r) return werr.fail(kRuleCorrupt, "shard_refs of " + h.to_string() + " does not decode");
    refs = std::move(*r);
  } else if (rc != MDB_NOTFOUND) {
    return rc;
  }

  std::vector<ChunkEntryKey> dead;
  for (XorbId id : refs.xorbs) {
    IdKey ik(id);
    if ((rc = del_dup(txn, d.xorb_shards, ik.mdb(), val(h)))) return rc;
    bool any;
    if ((rc = has_dups(txn, d.xorb_shards, ik.mdb(), any))) return rc;
    if (!any && (rc = drop_xorb(im, txn, id, dead, werr))) return rc;
  }
  if (!dead.empty()) {
    std::sort(dead.begin(), dead.end());
    Cursor recent, main;
    if ((rc = recent.open(txn, d.chunks_recent)) || (rc = main.open(txn, d.chunks))) return rc;
    for (const auto& e : dead) {
      for (MDB_cursor* c : {recent.get(), main.get()}) {
        MDB_val ck = e.mdb_key(), cv = e.mdb_value();
        rc = mdb_cursor_get(c, &ck, &cv, MDB_GET_BOTH);
        if (rc == MDB_NOTFOUND) continue;
        if (rc || (rc = mdb_cursor_del(c, 0))) return rc;
        break;
      }
    }
  }
  for (const Hash& fh : refs.files)
    if ((rc = drop_file_ref(im, txn, fh, h, werr))) return rc;

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
  WriteError werr;
  auto status = impl_->env->write(
      [&](MDB_txn* txn) {
        werr.error.reset();
        return detail::remove_in_txn(*impl_, txn, shard_hash, ShardState::removed, now, out, werr);
      },
      "removing a shard");
  if (!status) return status.error();
  if (werr.error) return *werr.error;
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
  // One transaction per shard: a large backlog never makes one huge
  // transaction, and each shard's removal is durable on its own.
  for (;;) {
    std::optional<Hash> victim;
    WriteError werr;
    RemoveResult out;
    auto status = impl_->env->write(
        [&](MDB_txn* txn) -> int {
          victim.reset();
          werr.error.reset();
          Cursor c;
          if (int rc = c.open(txn, impl_->dbs.expiry)) return rc;
          MDB_val k, v;
          int rc = c.move(&k, &v, MDB_FIRST);
          if (rc == MDB_NOTFOUND) return lmdb::kAbortTxn;
          if (rc) return rc;
          if (k.mv_size != 8 || v.mv_size != 32) return werr.fail(kRuleCorrupt, "expiry table entry of the wrong size");
          std::uint64_t when = load_be64(static_cast<const std::uint8_t*>(k.mv_data));
          if (when > now) return lmdb::kAbortTxn;
          victim = Hash::from_bytes(span_of(v));
          rc = detail::remove_in_txn(*impl_, txn, *victim, ShardState::expired, now, out, werr);
          if (rc == 0 && out.outcome != RemoveOutcome::removed) {
            // An expiry entry for a shard that is not live: damage; drop it
            // so expiry cannot loop on it.
            ExpiryKey ek(when);
            rc = del_expiry(txn, impl_->dbs.expiry, ek.mdb(), val(*victim));
          }
          return rc;
        },
        "expiring a shard");
    if (!status) return status.error();
    if (werr.error) return *werr.error;
    if (!victim) break;
    if (out.outcome == RemoveOutcome::removed) expired.push_back(*victim);
  }
  return expired;
}

}  // namespace dedupd::index
