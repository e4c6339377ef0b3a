// Chunk lookups: the hot read path. A batch shares one snapshot, one pass
// over the live keys and a per-xorb cache. Each stored form of a query (raw,
// and keyed with each live key) is searched only when the chunk filter
// allows it, so a miss usually costs no B-tree search and no allocation.
//
// A batch goes through in blocks of queries, in two passes: first every
// stored form of the block is computed (one BLAKE3 compression per key) and
// the filter blocks they fall in are prefetched; then the forms are tested
// and only those that may be present are searched. The filter probes are
// cache misses at any index size; issued together they overlap instead of
// each waiting for memory in turn.
#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "index/impl.hpp"
#include "shard/keys.hpp"

namespace dedupd::index {

using namespace records;
using detail::Cursor;

namespace detail {

std::optional<ShardRef> shard_ref(const Hash& shard_hash, const MDB_val& record) {
  // The fixed head of a ShardRecord (records.cpp): state, flags, ...,
  // expiry at 8, key at 72; paths follow at 104.
  if (record.mv_size < 104) return std::nullopt;
  auto p = static_cast<const std::uint8_t*>(record.mv_data);
  ShardRef r;
  r.shard = shard_hash;
  std::uint8_t flags = p[1];
  r.keyed = flags & 2;
  if (flags & 4) r.expiry = shard::load_u64(p + 8);
  r.key = Hash::from_bytes({p + 72, 32});
  return r;
}

}  // namespace detail

namespace {

// Everything one snapshot needs to answer chunk queries.
class ChunkReader {
 public:
  ChunkReader(const Index::Impl& im, lmdb::ReadTxn& txn, BatchResult& out)
      : im_(im), rtxn_(txn), txn_(txn.get()), out_(out), filters_(im.filters_for(mdb_txn_id(txn_))) {}

  int open() {
    int rc;
    MDB_stat st;
    if ((rc = mdb_stat(txn_, im_.dbs.chunks_recent, &st))) return rc;
    recent_empty_ = st.ms_entries == 0;  // right after a merge, and in a fresh index
    if ((rc = rtxn_.cursor(im_.dbs.chunks_recent, recent_)) || (rc = rtxn_.cursor(im_.dbs.chunks, chunks_)) ||
        (rc = rtxn_.cursor(im_.dbs.xorb_shards, xorb_shards_)) || (rc = rtxn_.cursor(im_.dbs.keys, keys_cur_)))
      return rc;
    MDB_val k, v;
    for (rc = mdb_cursor_get(keys_cur_, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(keys_cur_, &k, &v, MDB_NEXT_NODUP))
      if (k.mv_size == 32) hashers_.emplace_back(Hash::from_bytes(span_of(k)));
    return rc == MDB_NOTFOUND ? 0 : rc;
  }

  // Appends the locations of each raw hash to out_, in order.
  int query(std::span<const Hash> raws) {
    const std::size_t per_query = 1 + hashers_.size();
    forms_.resize(kBlock * per_query);
    for (std::size_t at = 0; at < raws.size(); at += kBlock) {
      auto block = raws.subspan(at, std::min(kBlock, raws.size() - at));
      // Pass 1: every stored form of the block, its filter blocks on their way.
      for (std::size_t i = 0; i < block.size(); ++i) {
        Form* f = &forms_[i * per_query];
        f[0].hash = block[i];
        for (std::size_t k = 0; k < hashers_.size(); ++k) f[1 + k].hash = hashers_[k](block[i]);
        for (std::size_t k = 0; k < per_query; ++k) prefetch(f[k].hash);
      }
      // Pass 2: test them all, then search only what may be present.
      for (std::size_t i = 0; i < block.size() * per_query; ++i) classify(forms_[i]);
      for (std::size_t i = 0; i < block.size(); ++i) {
        std::uint32_t begin = std::uint32_t(out_.locations.size());
        const Form* f = &forms_[i * per_query];
        for (std::size_t k = 0; k < per_query; ++k) {
          const Key* key = k == 0 ? nullptr : &hashers_[k - 1].key();
          if (f[k].in_recent)
            if (int rc = probe(recent_, f[k].hash, key, begin)) return rc;
          if (f[k].in_main)
            if (int rc = probe(chunks_, f[k].hash, key, begin)) return rc;
        }
        out_.first.push_back(std::uint32_t(out_.locations.size()));
      }
    }
    return 0;
  }

 private:
  // Queries per block: their forms (5 with 4 keys) and filter lines stay in
  // L1 between the passes.
  static constexpr std::size_t kBlock = 32;

  struct Form {
    Hash hash;
    bool in_recent, in_main;  // which tables to search
  };

  struct Cached {
    XorbRecordView rec;
    std::uint32_t shard_set;
  };

  void prefetch(const Hash& stored) const {
    if (filters_.all) filters_.all->prefetch(stored.data());
    if (filters_.recent && !recent_empty_) filters_.recent->prefetch(stored.data());
  }

  void classify(Form& f) const {
    f.in_recent = f.in_main = false;
    if (filters_.all && !filters_.all->may_contain(f.hash.data())) return;
    f.in_recent = !recent_empty_ && (!filters_.recent || filters_.recent->may_contain(f.hash.data()));
    f.in_main = true;
  }

  int probe(MDB_cursor* table, const Hash& stored, const Key* key, std::uint32_t begin) {
    auto probe_value = chunk_probe(stored.data());
    MDB_val k = val(stored.data(), kChunkKeyBytes), v = val(probe_value.data(), probe_value.size());
    int rc = mdb_cursor_get(table, &k, &v, MDB_GET_BOTH_RANGE);
    while (rc == 0) {
      auto dup = static_cast<const std::uint8_t*>(v.mv_data);
      if (v.mv_size != kChunkValueBytes || !chunk_value_matches(dup, stored.data())) break;
      std::uint32_t index = chunk_value_index(dup);
      const Cached* x;
      if ((rc = xorb(chunk_value_xorb(dup), x))) return rc;
      // The full 32 bytes decide; the key must be the one we hashed with.
      if (x && index < x->rec.num_chunks() && std::memcmp(x->rec.chunk_hash_bytes(index), stored.data(), 32) == 0 &&
          (key ? std::memcmp(x->rec.key_bytes(), key->data(), 32) == 0 : !x->rec.keyed()))
        emit(*x, index, begin);
      rc = mdb_cursor_get(table, &k, &v, MDB_NEXT_DUP);
    }
    return rc == MDB_NOTFOUND ? 0 : rc;
  }

  void emit(const Cached& x, std::uint32_t index, std::uint32_t begin) {
    BatchLocation l;
    l.xorb = x.rec.xorb_hash();
    l.chunk_index = index;
    x.rec.chunk_range(index, l.byte_start, l.unpacked_bytes, l.flags);
    l.byte_end = l.byte_start + l.unpacked_bytes;
    l.shard_set = x.shard_set;
    // The same chunk of the same xorb stored raw and keyed (or under two
    // keys) is one location with the shards of both.
    for (std::size_t i = begin; i < out_.locations.size(); ++i) {
      BatchLocation& o = out_.locations[i];
      if (o.xorb == l.xorb && o.chunk_index == l.chunk_index && o.byte_start == l.byte_start &&
          o.unpacked_bytes == l.unpacked_bytes && o.flags == l.flags) {
        if (o.shard_set != l.shard_set) o.shard_set = merged(o.shard_set, l.shard_set);
        return;
      }
    }
    out_.locations.push_back(l);
  }

  std::uint32_t merged(std::uint32_t a, std::uint32_t b) {
    std::vector<ShardRef> u = out_.shard_sets[a];
    for (const ShardRef& r : out_.shard_sets[b])
      if (std::none_of(u.begin(), u.end(), [&](const ShardRef& o) { return o.shard == r.shard; })) u.push_back(r);
    out_.shard_sets.push_back(std::move(u));
    return std::uint32_t(out_.shard_sets.size() - 1);
  }

  // The record of xorb `id` and its shard set, read once per snapshot.
  int xorb(XorbId id, const Cached*& found) {
    found = nullptr;
    // Neighbouring chunks of a file sit in one xorb: try the last one first.
    if (last_ && last_id_ == id) {
      found = last_;
      return 0;
    }
    if (auto it = cache_.find(id); it != cache_.end()) {
      found = last_ = &it->second;
      last_id_ = id;
      return 0;
    }
    IdKey ik(id);
    MDB_val k = ik.mdb(), v;
    int rc = mdb_get(txn_, im_.dbs.xorbs, &k, &v);
    if (rc == MDB_NOTFOUND) return 0;  // checker's business; a lookup just skips it
    if (rc) return rc;
    auto rec = XorbRecordView::decode(v);
    if (!rec) return 0;
    std::uint32_t set;
    if ((rc = shard_set_of(ik, set))) return rc;
    auto [it, _] = cache_.emplace(id, Cached{*rec, set});
    found = last_ = &it->second;  // unordered_map nodes do not move
    last_id_ = id;
    return 0;
  }

  // The shard set of a xorb. Most xorbs belong to one shard, and a batch
  // meets many xorbs of each shard: those share one set, and each shard's
  // record is read once per batch.
  int shard_set_of(const IdKey& ik, std::uint32_t& set) {
    shards_.clear();
    MDB_val sk = ik.mdb(), sv;
    int rc;
    for (rc = mdb_cursor_get(xorb_shards_, &sk, &sv, MDB_SET_KEY); rc == 0;
         rc = mdb_cursor_get(xorb_shards_, &sk, &sv, MDB_NEXT_DUP))
      if (sv.mv_size == 32) shards_.push_back(Hash::from_bytes(span_of(sv)));
    if (rc != MDB_NOTFOUND) return rc;
    if (shards_.size() == 1)
      if (auto it = single_sets_.find(shards_[0]); it != single_sets_.end()) {
        set = it->second;
        return 0;
      }
    std::vector<ShardRef> refs;
    for (const Hash& sh : shards_) {
      MDB_val rk = val(sh), rv;
      rc = mdb_get(txn_, im_.dbs.shards, &rk, &rv);
      if (rc == MDB_NOTFOUND) continue;
      if (rc) return rc;
      if (auto ref = detail::shard_ref(sh, rv)) refs.push_back(*ref);
    }
    out_.shard_sets.push_back(std::move(refs));
    set = std::uint32_t(out_.shard_sets.size() - 1);
    if (shards_.size() == 1) single_sets_.emplace(shards_[0], set);
    return 0;
  }

  const Index::Impl& im_;
  lmdb::ReadTxn& rtxn_;
  MDB_txn* txn_;
  BatchResult& out_;
  MDB_cursor *recent_ = nullptr, *chunks_ = nullptr, *xorb_shards_ = nullptr, *keys_cur_ = nullptr;
  Index::Impl::Filters filters_;
  bool recent_empty_ = false;
  std::vector<shard::KeyedChunkHasher> hashers_;  // one per live key
  std::vector<Form> forms_;
  std::unordered_map<XorbId, Cached> cache_;
  std::unordered_map<Hash, std::uint32_t> single_sets_;  // shard -> the set of its xorbs that only it holds
  std::vector<Hash> shards_;                             // scratch of shard_set_of
  const Cached* last_ = nullptr;
  XorbId last_id_ = 0;
};

}  // namespace

Status Index::lookup_batch(std::span<const Hash> hashes, BatchResult& out) const {
  out.clear();
  out.first.reserve(hashes.size() + 1);
  out.first.push_back(0);
  auto txn = impl_->env->begin_read();
  if (!txn) return txn.error();
  ChunkReader reader(*impl_, *txn, out);
  if (int rc = reader.open()) return lmdb::error_of(rc, "opening the chunk tables");
  if (int rc = reader.query(hashes)) return lmdb::error_of(rc, "looking up a chunk");
  return Ok{};
}

Result<std::vector<Location>> Index::lookup(const Hash& raw) const {
  BatchResult b;
  if (auto s = lookup_batch(std::span(&raw, 1), b); !s) return s.error();
  std::vector<Location> out;
  out.reserve(b.locations.size());
  for (const BatchLocation& l : b.of(0)) {
    Location loc;
    loc.xorb = l.xorb;
    loc.chunk_index = l.chunk_index;
    loc.byte_start = l.byte_start;
    loc.byte_end = l.byte_end;
    loc.unpacked_bytes = l.unpacked_bytes;
    loc.flags = l.flags;
    loc.shards = b.shards(l);
    out.push_back(std::move(loc));
  }
  return out;
}

Result<std::vector<Key>> Index::live_keys() const {
  auto txn = impl_->env->begin_read();
  if (!txn) return txn.error();
  Cursor c;
  if (int rc = c.open(txn->get(), impl_->dbs.keys)) return lmdb::error_of(rc, "reading keys");
  std::vector<Key> keys;
  MDB_val k, v;
  int rc;
  for (rc = c.move(&k, &v, MDB_FIRST); rc == 0; rc = c.move(&k, &v, MDB_NEXT_NODUP))
    if (k.mv_size == 32) keys.push_back(Hash::from_bytes(span_of(k)));
  if (rc != MDB_NOTFOUND) return lmdb::error_of(rc, "reading keys");
  return keys;
}

}  // namespace dedupd::index
