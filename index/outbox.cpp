// The outbox table (outbox.hpp): u64 BE sequence number -> u8 op, shard
// hash[32], u64 BE queued_at. Its switch and next sequence number live in
// `meta`, so turning the fleet on or off is one transaction like the rest.
#include "index/outbox.hpp"

#include <ctime>

#include "index/outbox_txn.hpp"
#include "shard/writer.hpp"

namespace dedupd::index {

using namespace records;
using detail::Cursor;

namespace {

constexpr const char* kOutboxEnabled = "outbox.enabled";
constexpr const char* kOutboxNextSeq = "outbox.next_seq";
constexpr std::size_t kValueBytes = 1 + 32 + 8;

std::uint64_t wall_now() { return std::uint64_t(std::time(nullptr)); }

int put_entry(const schema::Dbs& d, MDB_txn* txn, OutboxOp op, const Hash& shard, std::uint64_t now) {
  std::uint64_t seq;
  if (int rc = schema::get_u64(txn, d.meta, kOutboxNextSeq, seq)) return rc;
  if (seq == 0) seq = 1;
  std::uint8_t key[8], value[kValueBytes];
  store_be64(key, seq);
  value[0] = std::uint8_t(op);
  std::memcpy(value + 1, shard.data(), 32);
  store_be64(value + 33, now ? now : wall_now());
  MDB_val k = val(key, 8), v = val(value, kValueBytes);
  // Sequence numbers only grow, so every entry is an append.
  if (int rc = mdb_put(txn, d.outbox, &k, &v, MDB_APPEND)) return rc;
  return schema::put_u64(txn, d.meta, kOutboxNextSeq, seq + 1);
}

std::optional<OutboxEntry> decode_entry(const MDB_val& k, const MDB_val& v) {
  if (k.mv_size != 8 || v.mv_size != kValueBytes) return std::nullopt;
  auto p = static_cast<const std::uint8_t*>(v.mv_data);
  if (p[0] != std::uint8_t(OutboxOp::publish) && p[0] != std::uint8_t(OutboxOp::drop_hold)) return std::nullopt;
  OutboxEntry e;
  e.seq = load_be64(static_cast<const std::uint8_t*>(k.mv_data));
  e.op = OutboxOp(p[0]);
  e.shard = Hash::from_bytes({p + 1, 32});
  e.queued_at = load_be64(p + 33);
  return e;
}

int enabled(const schema::Dbs& d, MDB_txn* txn, bool& on) {
  std::uint64_t v;
  int rc = schema::get_u64(txn, d.meta, kOutboxEnabled, v);
  on = v != 0;
  return rc;
}

shard::FileRecord file_record(const shard::FileBlock& b) {
  shard::FileRecord f;
  f.header = b.header();
  for (std::uint32_t i = 0; i < b.num_terms(); ++i) f.terms.push_back(b.term(i));
  if (b.has_verification())
    for (std::uint32_t i = 0; i < b.num_terms(); ++i) f.verification.push_back(b.verification(i));
  if (b.has_metadata_ext()) f.metadata_ext = b.metadata_ext();
  return f;
}

}  // namespace

const char* to_string(OutboxOp op) {
  switch (op) {
    case OutboxOp::publish:
      return "publish";
    case OutboxOp::drop_hold:
      return "drop_hold";
  }
  return "unknown";
}

namespace detail {

int outbox_enqueue(Index::Impl& im, MDB_txn* txn, OutboxOp op, const Hash& shard, std::uint64_t now) {
  bool on;
  if (int rc = enabled(im.dbs, txn, on); rc || !on) return rc;
  im.outbox_queued = true;
  return put_entry(im.dbs, txn, op, shard, now);
}

int outbox_check(const Index::Impl& im, MDB_txn* txn, std::vector<std::string>& problems) {
  Cursor c;
  if (int rc = c.open(txn, im.dbs.outbox)) return rc;
  std::uint64_t next;
  if (int rc = schema::get_u64(txn, im.dbs.meta, kOutboxNextSeq, next)) return rc;
  bool on;
  if (int rc = enabled(im.dbs, txn, on)) return rc;
  MDB_val k, v;
  int rc;
  for (rc = c.move(&k, &v, MDB_FIRST); rc == 0; rc = c.move(&k, &v, MDB_NEXT)) {
    auto e = decode_entry(k, v);
    if (!e) {
      problems.push_back("outbox: an entry does not decode");
      continue;
    }
    if (e->seq >= next) problems.push_back("outbox: entry " + std::to_string(e->seq) + " is past the next sequence");
    if (!on) problems.push_back("outbox: entry " + std::to_string(e->seq) + " queued while the outbox is off");
  }
  return rc == MDB_NOTFOUND ? 0 : rc;
}

}  // namespace detail

Status Index::set_outbox(bool on, std::uint64_t now) {
  std::lock_guard lock(impl_->write_mu);
  const schema::Dbs& d = impl_->dbs;
  auto status = impl_->env->write(
      [&](MDB_txn* txn) -> lmdb::TxnResult {
        bool was;
        if (int rc = enabled(d, txn, was)) return rc;
        if (was == on) return lmdb::TxnResult::rollback();
        if (int rc = schema::put_u64(txn, d.meta, kOutboxEnabled, on ? 1 : 0)) return rc;
        if (!on) return mdb_drop(txn, d.outbox, 0);  // nobody will drain it
        impl_->outbox_queued = true;
        // Everything live now is news to the fleet; what was removed while the
        // outbox was off was never published, so there is no hold to drop.
        Cursor c;
        if (int rc = c.open(txn, d.shards)) return rc;
        MDB_val k, v;
        int rc;
        for (rc = c.move(&k, &v, MDB_FIRST); rc == 0; rc = c.move(&k, &v, MDB_NEXT)) {
          auto rec = decode_shard(v);
          if (k.mv_size != 32 || !rec || rec->state != ShardState::live) continue;
          Hash h = Hash::from_bytes(span_of(k));
          if ((rc = put_entry(d, txn, OutboxOp::publish, h, now))) return rc;
        }
        return rc == MDB_NOTFOUND ? 0 : rc;
      },
      on ? "turning the outbox on" : "turning the outbox off");
  impl_->outbox_written(status.ok());
  return status;
}

Result<std::vector<OutboxEntry>> Index::outbox_next(std::size_t max) const {
  auto txn = impl_->env->begin_read();
  if (!txn) return txn.error();
  std::vector<OutboxEntry> out;
  Cursor c;
  if (int rc = c.open(txn->get(), impl_->dbs.outbox)) return lmdb::error_of(rc, "reading the outbox");
  MDB_val k, v;
  int rc;
  for (rc = c.move(&k, &v, MDB_FIRST); rc == 0 && out.size() < max; rc = c.move(&k, &v, MDB_NEXT)) {
    auto e = decode_entry(k, v);
    if (!e) return detail::corrupt("an outbox entry does not decode");
    out.push_back(*e);
  }
  if (rc && rc != MDB_NOTFOUND) return lmdb::error_of(rc, "reading the outbox");
  return out;
}

Status Index::outbox_ack(std::uint64_t through_seq) {
  std::lock_guard lock(impl_->write_mu);
  return impl_->env->write(
      [&](MDB_txn* txn) -> lmdb::TxnResult {
        Cursor c;
        if (int rc = c.open(txn, impl_->dbs.outbox)) return rc;
        MDB_val k, v;
        int rc;
        bool any = false;
        while ((rc = c.move(&k, &v, MDB_FIRST)) == 0) {
          if (k.mv_size != 8 || load_be64(static_cast<const std::uint8_t*>(k.mv_data)) > through_seq) break;
          if ((rc = mdb_cursor_del(c.get(), 0))) return rc;
          any = true;
        }
        if (rc && rc != MDB_NOTFOUND) return rc;
        if (!any) return lmdb::TxnResult::rollback();
        return 0;
      },
      "acknowledging outbox entries");
}

Result<OutboxStats> Index::outbox_stats() const {
  auto txn = impl_->env->begin_read();
  if (!txn) return txn.error();
  OutboxStats s;
  if (int rc = enabled(impl_->dbs, txn->get(), s.enabled)) return lmdb::error_of(rc, "reading the outbox");
  MDB_stat st;
  if (int rc = mdb_stat(txn->get(), impl_->dbs.outbox, &st)) return lmdb::error_of(rc, "reading the outbox");
  s.depth = st.ms_entries;
  Cursor c;
  if (int rc = c.open(txn->get(), impl_->dbs.outbox)) return lmdb::error_of(rc, "reading the outbox");
  MDB_val k, v;
  int rc = c.move(&k, &v, MDB_FIRST);
  if (rc == 0) {
    auto e = decode_entry(k, v);
    if (!e) return detail::corrupt("an outbox entry does not decode");
    s.oldest_queued = e->queued_at;
  } else if (rc != MDB_NOTFOUND) {
    return lmdb::error_of(rc, "reading the outbox");
  }
  return s;
}

Result<std::optional<std::vector<std::uint8_t>>> Index::rebuild_shard(const Hash& shard_hash) const {
  using Out = std::optional<std::vector<std::uint8_t>>;
  auto txn = impl_->env->begin_read();
  if (!txn) return txn.error();
  const schema::Dbs& d = impl_->dbs;
  MDB_val k = val(shard_hash), v;
  int rc = mdb_get(txn->get(), d.shards, &k, &v);
  if (rc == MDB_NOTFOUND) return Out();
  if (rc) return lmdb::error_of(rc, "reading a shard record");
  auto rec = decode_shard(v);
  if (!rec) return detail::corrupt("shard record " + shard_hash.to_string() + " does not decode");
  if (rec->state != ShardState::live) return Out();
  if ((rc = mdb_get(txn->get(), d.shard_refs, &k, &v))) return lmdb::error_of(rc, "reading a shard's contributions");
  auto refs = decode_refs(v);
  if (!refs) return detail::corrupt("shard_refs of " + shard_hash.to_string() + " does not decode");

  shard::ShardWriter w;
  for (XorbId id : refs->xorbs) {
    IdKey ik(id);
    MDB_val xk = ik.mdb(), xv;
    if ((rc = mdb_get(txn->get(), d.xorbs, &xk, &xv))) return lmdb::error_of(rc, "reading a xorb of a shard");
    auto x = XorbRecordView::decode(xv);
    if (!x) return detail::corrupt("xorb record " + std::to_string(id) + " does not decode");
    shard::XorbRecord xr;
    xr.header = x->header();
    xr.chunks.reserve(x->num_chunks());
    for (std::uint32_t i = 0; i < x->num_chunks(); ++i) xr.chunks.push_back(x->chunk(i));
    w.add_xorb(std::move(xr));
  }
  std::vector<shard::FileRecord> files;
  bool all_verified = true;
  for (const Hash& fh : refs->files) {
    MDB_val fk = val(fh), fv;
    if ((rc = mdb_get(txn->get(), d.files, &fk, &fv))) return lmdb::error_of(rc, "reading a file of a shard");
    auto block = decode_file(fv);
    if (!block) return detail::corrupt("file record " + fh.to_string() + " does not decode");
    files.push_back(file_record(*block));
    all_verified = all_verified && !files.back().verification.empty();
  }
  // A file record may be a richer one another shard brought (ingest keeps
  // the richer); a shard has verification for all of its files or none.
  for (auto& f : files) {
    if (!all_verified) f.verification.clear();
    w.add_file(std::move(f));
  }
  shard::WriteOptions o;
  // The footer carries the key and the expiry the fleet keeps with the entries.
  o.with_footer = rec->has_footer || rec->keyed || rec->has_expiry;
  o.footer.chunk_hash_key = rec->keyed ? rec->key : Key{};
  o.footer.creation_timestamp = rec->created;
  o.footer.key_expiry = rec->has_expiry ? rec->expiry : shard::kNoExpiry;
  return Out(w.write(o));
}

}  // namespace dedupd::index
