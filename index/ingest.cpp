// Ingest: one shard's contribution in one write transaction.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>

#include "index/impl.hpp"
#include "index/index.hpp"
#include "index/outbox_txn.hpp"
#include "index/tuning.hpp"
#include "shard/cas_scope.hpp"
#include "shard/keys.hpp"

namespace dedupd::index {

using namespace records;

namespace detail {

std::size_t g_ingest_run_entries = std::size_t(1) << 18;

int put_source(OpenIndex& im, MDB_txn* txn, const Source& s) {
  if (s.path.empty()) return 0;
  Hash k = source_key(s.path);
  MDB_val key = val(k), old;
  int rc = mdb_get(txn, im.dbs.sources, &key, &old);
  bool was_rejected = false;
  if (rc == 0) {
    auto prev = decode_source(old);
    was_rejected = prev && prev->rejected;
  } else if (rc != MDB_NOTFOUND) {
    return rc;
  }
  Bytes b = encode(s);
  MDB_val v = val(b);
  if ((rc = mdb_put(txn, im.dbs.sources, &key, &v, 0))) return rc;
  if (was_rejected != s.rejected) return schema::add_u64(txn, im.dbs.meta, schema::kCountRejected, s.rejected ? 1 : -1);
  return 0;
}

namespace {

Source accepted(const SourceInfo& src, const Hash& shard, std::uint64_t now) {
  Source s;
  s.path = src.path;
  s.size = src.size;
  s.mtime_ns = src.mtime_ns;
  s.hash = shard;
  s.recorded_at = now;
  return s;
}

void add_path(ShardRecord& r, const std::string& path) {
  if (!path.empty() && std::find(r.paths.begin(), r.paths.end(), path) == r.paths.end()) r.paths.push_back(path);
}

int put_record(OpenIndex& im, MDB_txn* txn, const Hash& h, const ShardRecord& r) {
  Bytes b = encode(r);
  MDB_val k = val(h), v = val(b);
  return mdb_put(txn, im.dbs.shards, &k, &v, 0);
}

// The id of a stored xorb form equal to `block` under `key`, or 0.
TxnResult find_xorb_form(OpenIndex& im, MDB_txn* txn, MDB_cursor* ids, const shard::XorbBlock& block, const Key& key,
                         XorbId& found) {
  found = 0;
  Hash h = block.hash();
  MDB_val k = val(h), v;
  int rc = mdb_cursor_get(ids, &k, &v, MDB_SET_KEY);
  if (rc == MDB_NOTFOUND) return 0;
  // Stored forms are canonical encodings, so equal content is equal bytes,
  // except that a form written before the dense layout existed may be in
  // another one (compact): then what it rebuilds decides.
  XorbPlan plan = plan_xorb_record(block);
  Bytes mine(plan.size);
  encode_xorb_record(mine.data(), key, block, plan);
  auto same_content = [&](const XorbRecordView& rec) {
    if (rec.layout() == plan.layout || rec.keyed() != !key.is_zero() ||
        std::memcmp(rec.record().data() + 4, mine.data() + 4, kXorbRecordHeader - 4) != 0)
      return false;
    auto raw = block.raw();
    auto rebuilt = rec.cas_block();
    return std::equal(raw.begin(), raw.end(), rebuilt.begin(), rebuilt.end());
  };
  while (rc == 0) {
    if (v.mv_size != 4) return make_error(kRuleCorrupt, "xorb_ids: bad id size");
    XorbId id = load_be32(static_cast<const std::uint8_t*>(v.mv_data));
    IdKey ik(id);
    MDB_val xk = ik.mdb(), xv;
    if ((rc = mdb_get(txn, im.dbs.xorbs, &xk, &xv))) {
      if (rc == MDB_NOTFOUND) return make_error(kRuleCorrupt, "xorb_ids names a missing xorb record");
      return rc;
    }
    auto rec = XorbRecordView::decode(xv);
    if (!rec) return make_error(kRuleCorrupt, "xorb record " + std::to_string(id) + " does not decode");
    if ((rec->record().size() == mine.size() && std::memcmp(rec->record().data(), mine.data(), mine.size()) == 0) ||
        same_content(*rec)) {
      found = id;
      return 0;
    }
    rc = mdb_cursor_get(ids, &k, &v, MDB_NEXT_DUP);
  }
  return rc == MDB_NOTFOUND ? 0 : rc;
}

// Keeps the richer description of a file: a later shard may carry the
// verification entries or the sha256 an earlier one lacked. The file hash
// fixes the content, so either description is true; never downgrade.
bool richer(const shard::FileBlock& now, const shard::FileBlock& before) {
  bool ver = now.has_verification() || !before.has_verification();
  bool meta = now.has_metadata_ext() || !before.has_metadata_ext();
  bool more =
      (now.has_verification() && !before.has_verification()) || (now.has_metadata_ext() && !before.has_metadata_ext());
  return ver && meta && more && now.num_terms() == before.num_terms();
}

TxnResult add_file(OpenIndex& im, MDB_txn* txn, const shard::ShardView& view, const shard::FileBlock& fb,
                   const Hash& shard_hash, ShardRefs& refs, IngestResult& out) {
  Hash fh = fb.hash();
  MDB_val k = val(fh), sv = val(shard_hash);
  int rc = mdb_put(txn, im.dbs.file_shards, &k, &sv, MDB_NODUPDATA);
  if (rc == MDB_KEYEXIST) return 0;  // listed twice in this shard
  if (rc) return rc;
  refs.files.push_back(fh);
  refs.file_flags.push_back(ref_flags_of(fb.header()));
  auto bytes = view.bytes().subspan(fb.offset(), fb.byte_size());
  MDB_val old;
  rc = mdb_get(txn, im.dbs.files, &k, &old);
  std::optional<Hash> old_sha;
  if (rc == 0) {
    auto before = decode_file(old);
    if (!before) return make_error(kRuleCorrupt, "file record " + fh.to_string() + " does not decode");
    if (!richer(fb, *before)) return 0;
    old_sha = before->sha256();
  } else if (rc != MDB_NOTFOUND) {
    return rc;
  } else {
    ++out.new_files;
  }
  Bytes rec = encode_file_record(bytes);
  MDB_val v = val(rec);
  if ((rc = mdb_put(txn, im.dbs.files, &k, &v, 0))) return rc;
  if (auto sha = fb.sha256(); sha && !old_sha) {
    MDB_val sk = val(*sha), fv = val(fh);
    if ((rc = mdb_put(txn, im.dbs.sha256, &sk, &fv, MDB_NODUPDATA)) && rc != MDB_KEYEXIST) return rc;
  }
  return 0;
}

// A xorb the shard brings in: its chunk entries are still to be written.
struct FreshXorb {
  shard::XorbBlock block;
  XorbId id;
};

ChunkEntryKey unpack(std::uint8_t key, const PackedChunkValue& p) {
  ChunkEntryKey e;
  e.key[0] = key;
  p.store(e.value.data());
  return e;
}

// Writes the chunk entries of the shard's new xorbs into chunks_recent in
// key order, one bounded run at a time (g_ingest_run_entries): the memory
// stays the same for any shard size, a larger shard costs more passes over
// its xorbs. Sorted puts walk each page once, in sequence; a put past the
// last entry of its key appends (MDB_APPENDDUP), which leaves full pages
// where a plain put would split them in half, so the transaction dirties
// (and LMDB allocates) about half the pages.
class EntryWriter {
 public:
  EntryWriter(OpenIndex& im, MDB_txn* txn, const std::vector<FreshXorb>& fresh,
              const std::array<std::uint64_t, 256>& per_key)
      : im_(im), txn_(txn), fresh_(fresh), per_key_(per_key) {}

  int write(std::uint64_t total) {
    if (total == 0) return 0;
    int rc = cursor_.open(txn_, im_.dbs.chunks_recent);
    if (rc) return rc;
    const std::size_t cap = std::max<std::size_t>(1, g_ingest_run_entries);
    run_.resize(std::min<std::uint64_t>(total, cap));
    for (unsigned lo = 0; lo < 256;) {
      if (per_key_[lo] == 0) {
        ++lo;
      } else if (per_key_[lo] > cap) {
        if ((rc = write_big_key(std::uint8_t(lo)))) return rc;
        ++lo;
      } else {
        unsigned hi = lo;
        for (std::uint64_t n = 0; hi < 256 && n + per_key_[hi] <= cap; ++hi) n += per_key_[hi];
        if ((rc = write_keys(lo, hi))) return rc;
        lo = hi;
      }
    }
    return 0;
  }

 private:
  // Keys [lo, hi), whose entries fit one run: each key's entries land in
  // their own slice of the run (counting sort on the key byte).
  int write_keys(unsigned lo, unsigned hi) {
    std::array<std::size_t, 257> at{};
    for (unsigned k = lo; k < hi; ++k) at[k + 1] = at[k] + per_key_[k];
    std::array<std::size_t, 257> begin = at;
    for (const FreshXorb& fx : fresh_)
      for (std::uint32_t i = 0; i < fx.block.num_chunks(); ++i) {
        const std::uint8_t* h = fx.block.chunk_hash_bytes(i);
        if (h[0] >= lo && h[0] < hi) run_[at[h[0]]++] = PackedChunkValue::of(h, fx.id, i);
      }
    for (unsigned k = lo; k < hi; ++k) {
      if (begin[k] == at[k]) continue;
      PackedChunkValue *b = run_.data() + begin[k], *e = run_.data() + at[k];
      std::sort(b, e);
      if (int rc = put_sorted(std::uint8_t(k), b, e)) return rc;
    }
    return 0;
  }

  // A key with more entries than a run (a huge or a skewed shard): sorted
  // runs of it one after the other. Correct in any order; only slower.
  int write_big_key(std::uint8_t k) {
    std::size_t n = 0;
    auto flush = [&] {
      std::sort(run_.begin(), run_.begin() + std::ptrdiff_t(n));
      int rc = put_sorted(k, run_.data(), run_.data() + n);
      n = 0;
      return rc;
    };
    for (const FreshXorb& fx : fresh_)
      for (std::uint32_t i = 0; i < fx.block.num_chunks(); ++i) {
        const std::uint8_t* h = fx.block.chunk_hash_bytes(i);
        if (h[0] != k) continue;
        run_[n++] = PackedChunkValue::of(h, fx.id, i);
        if (n == run_.size())
          if (int rc = flush()) return rc;
      }
    return n ? flush() : 0;
  }

  // Sorted, distinct entries of key k. Those above the key's last stored
  // duplicate are appends; the rest (when the recent table already holds
  // entries of k) are ordinary puts. The entries are new (their xorb ids
  // are), so none equals a stored one.
  int put_sorted(std::uint8_t k, const PackedChunkValue* b, const PackedChunkValue* e) {
    MDB_val key = val(&k, 1), v;
    const PackedChunkValue* appends = b;
    int rc = mdb_cursor_get(cursor_.get(), &key, &v, MDB_SET_KEY);
    if (rc == 0) {
      if ((rc = mdb_cursor_get(cursor_.get(), &key, &v, MDB_LAST_DUP))) return rc;
      if (v.mv_size != kChunkValueBytes) return MDB_CORRUPTED;
      auto p = static_cast<const std::uint8_t*>(v.mv_data);
      PackedChunkValue last = PackedChunkValue::load(p, kChunkValueBytes);
      appends = std::upper_bound(b, e, last);
    } else if (rc != MDB_NOTFOUND) {
      return rc;
    }
    for (const PackedChunkValue* p = b; p < appends; ++p) {
      ChunkEntryKey ce = unpack(k, *p);
      MDB_val ck = ce.mdb_key(), cv = ce.mdb_value();
      if ((rc = mdb_cursor_put(cursor_.get(), &ck, &cv, 0))) return rc;
      im_.filter_add(ce);  // before the commit, so readers of it may trust the filter
    }
    // Appends go in blocks with MDB_MULTIPLE, one call finding the key for
    // the whole block (the index write of a 1 Mi-entry shard takes 18 % less
    // CPU). Not `key`: mdb_cursor_get pointed it into a page writes may move.
    for (const PackedChunkValue* p = appends; p < e;) {
      std::size_t n = std::min<std::size_t>(kBlock, std::size_t(e - p));
      for (std::size_t i = 0; i < n; ++i) {
        ChunkEntryKey ce = unpack(k, p[i]);
        std::memcpy(block_.data() + i * kChunkValueBytes, ce.value.data(), kChunkValueBytes);
        im_.filter_add(ce);
      }
      MDB_val ck = val(&k, 1), data[2] = {val(block_.data(), kChunkValueBytes), MDB_val{n, nullptr}};
      if ((rc = mdb_cursor_put(cursor_.get(), &ck, data, MDB_MULTIPLE | MDB_APPENDDUP))) return rc;
      if (data[1].mv_size != n) return MDB_CORRUPTED;
      p += n;
    }
    return 0;
  }

  static constexpr std::size_t kBlock = 1024;
  OpenIndex& im_;
  MDB_txn* txn_;
  const std::vector<FreshXorb>& fresh_;
  const std::array<std::uint64_t, 256>& per_key_;
  Cursor cursor_;
  std::vector<PackedChunkValue> run_;
  std::array<std::uint8_t, kBlock * kChunkValueBytes> block_;
};

}  // namespace

TxnResult ingest_in_txn(OpenIndex& im, MDB_txn* txn, const shard::ShardView& view, const Hash& h,
                        const SourceInfo& source, const IngestOptions& opt, IngestResult& out) {
  const schema::Dbs& d = im.dbs;
  out = IngestResult{};
  out.shard = h;
  out.xorbs = view.stats().xorbs;
  out.chunks = view.stats().chunks;
  out.files = view.stats().files;

  MDB_val k = val(h), v;
  int rc = mdb_get(txn, d.shards, &k, &v);
  std::optional<ShardRecord> existing;
  if (rc == 0) {
    existing = decode_shard(v);
    if (!existing) return make_error(kRuleCorrupt, "shard record " + h.to_string() + " does not decode");
  } else if (rc != MDB_NOTFOUND) {
    return rc;
  }

  if (existing && (existing->state == ShardState::live || !opt.revive)) {
    out.outcome = existing->state == ShardState::live ? IngestOutcome::already_present : IngestOutcome::previously_gone;
    // Another CAS accepted the same bytes: both hold its xorbs now.
    bool learned_cas = shard::add_cas(existing->cas, opt.cas);
    if (!source.path.empty()) add_path(*existing, source.path);
    if (!source.path.empty() || learned_cas)
      if ((rc = put_record(im, txn, h, *existing))) return rc;
    // The fleet learns it too: publishing a shard it has merges the CAS set.
    if (learned_cas && existing->state == ShardState::live)
      if ((rc = outbox_enqueue(im, txn, OutboxOp::publish, h, opt.now))) return rc;
    return put_source(im, txn, accepted(source, h, opt.now));
  }

  ShardRecord rec;
  if (existing) rec.paths = existing->paths;
  add_path(rec, source.path);
  if (existing) rec.cas = existing->cas;
  shard::add_cas(rec.cas, opt.cas);
  rec.has_footer = view.has_footer();
  rec.keyed = view.keyed();
  rec.key = view.chunk_key();
  auto expiry = view.expiry();
  rec.has_expiry = expiry.has_value();
  rec.expiry = expiry.value_or(0);
  rec.created = view.creation_timestamp();
  rec.size = view.bytes().size();
  rec.ingested_at = opt.now;
  rec.xorbs = out.xorbs, rec.chunks = out.chunks, rec.files = out.files;

  auto count_transition = [&](ShardState to) -> int {
    if (existing)
      if (int r = schema::add_u64(txn, d.meta, schema::counter_of(existing->state), -1)) return r;
    return schema::add_u64(txn, d.meta, schema::counter_of(to), 1);
  };

  if (opt.now != 0 && expiry && *expiry <= opt.now) {
    rec.state = ShardState::expired;
    rec.ended_at = opt.now;
    out.outcome = IngestOutcome::expired;
    if ((rc = put_record(im, txn, h, rec)) || (rc = count_transition(ShardState::expired))) return rc;
    if (auto r = keep_expired_forms(im, txn, h, rec, view, opt.now); !r.proceed()) return r;
    return put_source(im, txn, accepted(source, h, opt.now));
  }

  std::uint64_t next_id;
  if ((rc = schema::get_u64(txn, d.meta, schema::kNextXorbId, next_id))) return rc;
  if (next_id == 0) next_id = 1;  // 0 means "none" in find_xorb_form

  Key key = view.chunk_key();
  ShardRefs refs;
  refs.xorbs.reserve(view.stats().xorbs);
  std::vector<FreshXorb> fresh;
  std::array<std::uint64_t, 256> per_key{};  // new entries per chunk table key
  std::uint64_t new_entries = 0;
  {
    Cursor ids;
    if ((rc = ids.open(txn, d.xorb_ids))) return rc;
    for (const shard::XorbBlock& xb : view.xorbs()) {
      if (xb.num_chunks() >= kMaxChunksPerXorb)
        return make_error(kRuleLimit, "xorb " + xb.hash().to_string() + " has " + std::to_string(xb.num_chunks()) +
                                          " chunks; the index stores at most " + std::to_string(kMaxChunksPerXorb - 1) +
                                          " per xorb");
      XorbId id;
      if (auto r = find_xorb_form(im, txn, ids.get(), xb, key, id); !r.proceed()) return r;
      if (id == 0) {
        if (next_id > kMaxXorbId) return make_error(kRuleLimit, "xorb ids exhausted");
        id = XorbId(next_id++);
        IdKey ik(id);
        XorbPlan plan = plan_xorb_record(xb);
        MDB_val xk = ik.mdb(), xv{plan.size, nullptr};
        // MDB_RESERVE: the record is laid out straight into its pages.
        if ((rc = mdb_put(txn, d.xorbs, &xk, &xv, MDB_RESERVE))) return rc;
        encode_xorb_record(static_cast<std::uint8_t*>(xv.mv_data), key, xb, plan);
        Hash xh = xb.hash();
        MDB_val hk = val(xh), iv = ik.mdb();
        if ((rc = mdb_put(txn, d.xorb_ids, &hk, &iv, 0))) return rc;
        // Counted now, while the xorb's entries are in the cache.
        for (std::uint32_t i = 0; i < xb.num_chunks(); ++i) ++per_key[xb.chunk_hash_bytes(i)[0]];
        fresh.push_back({xb, id});
        new_entries += xb.num_chunks();
        ++out.new_xorbs;
      }
      IdKey ik(id);
      MDB_val xk = ik.mdb(), sv = val(h);
      rc = mdb_put(txn, d.xorb_shards, &xk, &sv, MDB_NODUPDATA);
      if (rc == MDB_KEYEXIST) continue;  // the same xorb twice in this shard
      if (rc) return rc;
      refs.xorbs.push_back(id);
    }
  }
  if ((rc = EntryWriter(im, txn, fresh, per_key).write(new_entries))) return rc;
  out.new_chunk_entries = new_entries;
  if ((rc = schema::put_u64(txn, d.meta, schema::kNextXorbId, next_id))) return rc;

  for (const shard::FileBlock& fb : view.files())
    if (auto r = add_file(im, txn, view, fb, h, refs, out); !r.proceed()) return r;

  MDB_val sv = val(h);
  if (rec.keyed) {
    MDB_val kk = val(rec.key);
    if ((rc = mdb_put(txn, d.keys, &kk, &sv, 0))) return rc;
  }
  if (rec.has_expiry) {
    ExpiryKey ek(rec.expiry);
    MDB_val ekv = ek.mdb();
    if ((rc = mdb_put(txn, d.expiry, &ekv, &sv, 0))) return rc;
  }
  Bytes rb = encode(refs);
  MDB_val rv = val(rb);
  if ((rc = mdb_put(txn, d.shard_refs, &k, &rv, 0))) return rc;
  rec.state = ShardState::live;
  if ((rc = put_record(im, txn, h, rec)) || (rc = count_transition(ShardState::live))) return rc;
  // Live again (revived after a removal): no longer a hint of expiry.
  if ((rc = forget_expired_forms(im, txn, h))) return rc;
  out.outcome = IngestOutcome::added;
  if ((rc = outbox_enqueue(im, txn, OutboxOp::publish, h, opt.now))) return rc;
  return put_source(im, txn, accepted(source, h, opt.now));
}

}  // namespace detail

Result<IngestResult> Index::ingest(const shard::ShardView& view, const SourceInfo& source,
                                   const IngestOptions& options) {
  BatchItem item{&view, source, options};
  auto r = ingest_batch(std::span(&item, 1));
  if (!r) return r.error();
  return std::move(r->front());
}

Result<std::vector<IngestResult>> Index::ingest_batch(std::span<const BatchItem> items) {
  // Hashing reads every byte: do it before taking the writer lock.
  std::vector<Hash> hashes;
  hashes.reserve(items.size());
  for (const auto& it : items)
    hashes.push_back(it.options.shard_hash ? *it.options.shard_hash : shard::shard_file_hash(it.shard->bytes()));

  std::lock_guard lock(impl_->write_mu);
  std::vector<IngestResult> results(items.size());
  auto status = impl_->env->write(
      [&](MDB_txn* txn) -> detail::TxnResult {
        for (std::size_t i = 0; i < items.size(); ++i)
          if (auto r = detail::ingest_in_txn(*impl_, txn, *items[i].shard, hashes[i], items[i].source, items[i].options,
                                             results[i]);
              !r.proceed())
            return r;
        return detail::TxnResult::commit();
      },
      "ingesting a shard");
  impl_->outbox_written(status.ok());
  if (!status) return status.error();
  // The shards are committed: a failed merge must not turn their success
  // into an error. Their entries stay queryable in the recent table and the
  // merge is tried again after the next ingest.
  auto slice_end = std::chrono::steady_clock::now() + impl_->options.merge_slice;
  if (auto merged = impl_->merge_if_due(false, slice_end); !merged && impl_->options.observer)
    impl_->options.observer->merge_failed(merged.error());
  return results;
}

}  // namespace dedupd::index
