// The outbox table (outbox.hpp): u64 BE sequence number -> u8 op, shard
// hash[32], u64 BE queued_at. Its switch and next sequence number live in
// `meta`, so turning the fleet on or off is one transaction like the rest.
// The parked table (schema 3): the entry's own sequence number -> the same
// 41 bytes, u64 BE parked_at, then the reason (UTF-8, the rest). Here are
// the hooks the write paths call (outbox_txn.hpp) and the Index's outbox
// methods (index.hpp).
#include <ctime>
#include <map>
#include <set>

#include "index/index.hpp"
#include "index/outbox_txn.hpp"
#include "shard/cas_scope.hpp"
#include "shard/writer.hpp"

namespace dedupd::index {

using namespace records;
using detail::Cursor;

namespace detail {

constexpr std::size_t kOutboxValueBytes = 1 + 32 + 8;

std::optional<OutboxEntry> decode_entry(const MDB_val& k, const MDB_val& v) {
  if (k.mv_size != 8 || v.mv_size != kOutboxValueBytes) return std::nullopt;
  auto p = static_cast<const std::uint8_t*>(v.mv_data);
  if (p[0] != std::uint8_t(OutboxOp::publish) && p[0] != std::uint8_t(OutboxOp::drop_hold)) return std::nullopt;
  OutboxEntry e;
  e.seq = load_be64(static_cast<const std::uint8_t*>(k.mv_data));
  e.op = OutboxOp(p[0]);
  e.shard = Hash::from_bytes({p + 1, 32});
  e.queued_at = load_be64(p + 33);
  return e;
}

std::optional<ParkedEntry> decode_parked(const MDB_val& k, const MDB_val& v) {
  if (v.mv_size < kOutboxValueBytes + 8) return std::nullopt;
  MDB_val head = val(v.mv_data, kOutboxValueBytes);
  auto e = decode_entry(k, head);
  if (!e) return std::nullopt;
  auto p = static_cast<const std::uint8_t*>(v.mv_data);
  ParkedEntry pe;
  pe.entry = *e;
  pe.parked_at = load_be64(p + kOutboxValueBytes);
  pe.reason.assign(reinterpret_cast<const char*>(p + kOutboxValueBytes + 8), v.mv_size - kOutboxValueBytes - 8);
  return pe;
}

}  // namespace detail

namespace {

constexpr const char* kOutboxEnabled = "outbox.enabled";
constexpr const char* kOutboxNextSeq = "outbox.next_seq";
constexpr std::size_t kValueBytes = detail::kOutboxValueBytes;
using detail::decode_entry;
using detail::decode_parked;

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

// For a shard indexed before schema 3, whose refs do not say what the shard
// said of each file: a shard has verification for all of its files or none,
// so it had them when every file with terms has them now; a file without
// terms follows the rest. That parses, and is exact unless another shard
// brought the richer records.
std::vector<std::uint8_t> guessed_flags(const std::vector<shard::FileRecord>& files) {
  bool any_terms = false, all_verified = true;
  for (const auto& f : files)
    if (!f.terms.empty()) {
      any_terms = true;
      all_verified = all_verified && !f.verification.empty();
    }
  const std::uint8_t ver = any_terms && all_verified ? kRefVerification : 0;
  std::vector<std::uint8_t> flags;
  for (const auto& f : files) flags.push_back(std::uint8_t(ver | (f.metadata_ext ? kRefMetadataExt : 0)));
  return flags;
}

}  // namespace

namespace detail {

int outbox_enqueue(OpenIndex& im, MDB_txn* txn, OutboxOp op, const Hash& shard, std::uint64_t now) {
  bool on;
  if (int rc = enabled(im.dbs, txn, on); rc || !on) return rc;
  im.outbox_queued = true;
  return put_entry(im.dbs, txn, op, shard, now);
}

int outbox_check(const OpenIndex& im, MDB_txn* txn, std::vector<std::string>& problems) {
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
  if (rc != MDB_NOTFOUND) return rc;
  if (im.dbs.version < 3) return 0;
  Cursor pc;
  if ((rc = pc.open(txn, im.dbs.parked))) return rc;
  for (rc = pc.move(&k, &v, MDB_FIRST); rc == 0; rc = pc.move(&k, &v, MDB_NEXT)) {
    auto e = decode_parked(k, v);
    if (!e) problems.push_back("outbox: a parked entry does not decode");
    else if (!on)
      problems.push_back("outbox: entry " + std::to_string(e->entry.seq) + " parked while the outbox is off");
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
        if (!on) {  // nobody will drain them
          if (int rc = mdb_drop(txn, d.parked, 0)) return rc;
          return mdb_drop(txn, d.outbox, 0);
        }
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
  if (impl_->dbs.version >= 3) {
    if ((rc = mdb_stat(txn->get(), impl_->dbs.parked, &st))) return lmdb::error_of(rc, "reading the parked entries");
    s.parked = st.ms_entries;
  }
  return s;
}

Status Index::outbox_park(const OutboxEntry& entry, const std::string& reason, std::uint64_t now) {
  std::lock_guard lock(impl_->write_mu);
  const schema::Dbs& d = impl_->dbs;
  return impl_->env->write(
      [&](MDB_txn* txn) -> lmdb::TxnResult {
        std::uint8_t key[8];
        store_be64(key, entry.seq);
        MDB_val k = val(key, 8);
        if (int rc = mdb_del(txn, d.outbox, &k, nullptr); rc && rc != MDB_NOTFOUND) return rc;
        std::vector<std::uint8_t> value(kValueBytes + 8 + reason.size());
        value[0] = std::uint8_t(entry.op);
        std::memcpy(value.data() + 1, entry.shard.data(), 32);
        store_be64(value.data() + 33, entry.queued_at);
        store_be64(value.data() + kValueBytes, now ? now : wall_now());
        std::memcpy(value.data() + kValueBytes + 8, reason.data(), reason.size());
        MDB_val v = val(value);
        return mdb_put(txn, d.parked, &k, &v, 0);
      },
      "parking an outbox entry");
}

Result<std::vector<ParkedEntry>> Index::outbox_parked(std::size_t max) const {
  std::vector<ParkedEntry> out;
  if (impl_->dbs.version < 3) return out;  // read-only, before the upgrade: none
  auto txn = impl_->env->begin_read();
  if (!txn) return txn.error();
  Cursor c;
  if (int rc = c.open(txn->get(), impl_->dbs.parked)) return lmdb::error_of(rc, "reading the parked entries");
  MDB_val k, v;
  int rc;
  for (rc = c.move(&k, &v, MDB_FIRST); rc == 0 && out.size() < max; rc = c.move(&k, &v, MDB_NEXT)) {
    auto e = decode_parked(k, v);
    if (!e) return detail::corrupt("a parked outbox entry does not decode");
    out.push_back(std::move(*e));
  }
  if (rc && rc != MDB_NOTFOUND) return lmdb::error_of(rc, "reading the parked entries");
  return out;
}

Result<std::uint64_t> Index::outbox_retry_parked(std::uint64_t now) {
  std::lock_guard lock(impl_->write_mu);
  const schema::Dbs& d = impl_->dbs;
  std::uint64_t moved = 0;
  auto status = impl_->env->write(
      [&](MDB_txn* txn) -> lmdb::TxnResult {
        moved = 0;
        Cursor c;
        if (int rc = c.open(txn, d.parked)) return rc;
        MDB_val k, v;
        int rc;
        while ((rc = c.move(&k, &v, MDB_FIRST)) == 0) {
          auto e = decode_parked(k, v);
          if (!e) return detail::corrupt("a parked outbox entry does not decode");
          if ((rc = mdb_cursor_del(c.get(), 0))) return rc;
          if ((rc = put_entry(d, txn, e->entry.op, e->entry.shard, now))) return rc;
          ++moved;
        }
        if (rc != MDB_NOTFOUND) return rc;
        if (moved == 0) return lmdb::TxnResult::rollback();
        impl_->outbox_queued = true;
        return 0;
      },
      "queuing parked outbox entries again");
  impl_->outbox_written(status.ok());
  if (!status) return status.error();
  return moved;
}

Result<ReconcileRound> Index::outbox_reconcile(const std::optional<Hash>& after, std::span<const Hash> fleet_held,
                                               bool fleet_more, std::size_t max, std::uint64_t now,
                                               std::span<const std::string> fleet_cas) {
  std::lock_guard lock(impl_->write_mu);
  const schema::Dbs& d = impl_->dbs;
  ReconcileRound out;
  auto status = impl_->env->write(
      [&](MDB_txn* txn) -> lmdb::TxnResult {
        out = ReconcileRound{};
        bool on;
        if (int rc = enabled(d, txn, on); rc || !on) return rc ? lmdb::TxnResult(rc) : lmdb::TxnResult::rollback();
        // The live shards after `after`, at most `max` records read.
        std::vector<Hash> live;
        std::map<Hash, std::string> live_cas;  // of the live shards with a known CAS set
        bool local_more = false;
        std::optional<Hash> last_read;
        {
          Cursor c;
          if (int rc = c.open(txn, d.shards)) return rc;
          MDB_val k = after ? val(*after) : MDB_val{0, nullptr}, v;
          int rc = after ? c.move(&k, &v, MDB_SET_RANGE) : c.move(&k, &v, MDB_FIRST);
          std::size_t read = 0;
          for (; rc == 0; rc = c.move(&k, &v, MDB_NEXT)) {
            if (k.mv_size != 32) continue;
            Hash h = Hash::from_bytes(span_of(k));
            if (after && h == *after) continue;
            if (read == max) {
              local_more = true;
              break;
            }
            ++read;
            last_read = h;
            auto rec = decode_shard(v);
            if (rec && rec->state == ShardState::live) {
              live.push_back(h);
              if (!rec->cas.empty()) live_cas[h] = rec->cas;
            }
          }
          if (rc && rc != MDB_NOTFOUND) return rc;
        }
        // Both sides are complete up to `through`.
        if (fleet_more && !fleet_held.empty()) out.through = fleet_held.back();
        if (local_more && last_read && (!out.through || *last_read < *out.through)) out.through = last_read;
        auto covered = [&](const Hash& h) { return !out.through || h <= *out.through; };
        // What is queued or parked already gets there by itself.
        std::set<Hash> pending;
        for (MDB_dbi table : {d.outbox, d.parked}) {
          Cursor c;
          if (int rc = c.open(txn, table)) return rc;
          MDB_val k, v;
          int rc;
          for (rc = c.move(&k, &v, MDB_FIRST); rc == 0; rc = c.move(&k, &v, MDB_NEXT))
            if (v.mv_size >= kValueBytes)
              pending.insert(Hash::from_bytes({static_cast<const std::uint8_t*>(v.mv_data) + 1, 32}));
          if (rc != MDB_NOTFOUND) return rc;
        }
        std::set<Hash> held(fleet_held.begin(), fleet_held.end());
        for (const Hash& h : live)
          if (covered(h) && !held.contains(h) && !pending.contains(h)) {
            if (int rc = put_entry(d, txn, OutboxOp::publish, h, now)) return rc;
            ++out.publish;
          }
        // Held, but without a CAS that accepted it here (the entry that
        // would have said so was lost): published again, the fleet adds it.
        if (fleet_cas.size() == fleet_held.size())
          for (std::size_t i = 0; i < fleet_held.size(); ++i) {
            const Hash& h = fleet_held[i];
            auto local = live_cas.find(h);
            if (local == live_cas.end() || !covered(h) || !held.contains(h) || pending.contains(h)) continue;
            const bool lacks =
                shard::any_cas(local->second, [&](std::string_view c) { return !shard::holds_cas(fleet_cas[i], c); });
            if (!lacks) continue;
            if (int rc = put_entry(d, txn, OutboxOp::publish, h, now)) return rc;
            ++out.cas;
          }
        std::set<Hash> here(live.begin(), live.end());
        for (const Hash& h : fleet_held)
          if (covered(h) && !here.contains(h) && !pending.contains(h)) {
            if (int rc = put_entry(d, txn, OutboxOp::drop_hold, h, now)) return rc;
            ++out.drop;
          }
        if (out.publish + out.drop + out.cas == 0) return lmdb::TxnResult::rollback();
        impl_->outbox_queued = true;
        return 0;
      },
      "reconciling with the fleet");
  impl_->outbox_written(status.ok());
  if (!status) return status.error();
  return out;
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
  for (const Hash& fh : refs->files) {
    MDB_val fk = val(fh), fv;
    if ((rc = mdb_get(txn->get(), d.files, &fk, &fv))) return lmdb::error_of(rc, "reading a file of a shard");
    auto block = decode_file(fv);
    if (!block) return detail::corrupt("file record " + fh.to_string() + " does not decode");
    files.push_back(file_record(*block));
  }
  std::vector<std::uint8_t> flags = refs->file_flags;
  if (flags.empty()) flags = guessed_flags(files);
  for (std::size_t i = 0; i < files.size(); ++i) {
    // The file record may be a richer one another shard brought: give the
    // file what this shard said of it, no more.
    shard::FileRecord& f = files[i];
    const bool ver = flags[i] & kRefVerification, meta = flags[i] & kRefMetadataExt;
    if ((ver && !f.terms.empty() && f.verification.empty()) || (meta && !f.metadata_ext))
      return make_error(kRuleRebuild, "shard " + shard_hash.to_string() + ": the record of file " +
                                          f.header.file_hash.to_string() + " lacks the " +
                                          (meta && !f.metadata_ext ? "metadata extension" : "verification entries") +
                                          " the shard had");
    if (!ver) f.verification.clear();
    if (!meta) f.metadata_ext.reset();
    // The writer takes a file without terms at its header's word.
    f.header.flags =
        (f.header.flags & ~shard::kFileFlagWithVerification) | (ver ? shard::kFileFlagWithVerification : 0);
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
