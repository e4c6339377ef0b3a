// Chunk lookups: the hot read path. A batch shares one snapshot, one pass
// over the live keys and a per-xorb cache. Each stored form of a query (raw,
// and keyed with each live key) is searched only when the chunk filter
// allows it, so a miss usually costs no B-tree search and no allocation.
//
// A batch goes through in blocks of queries: first every stored form of a
// block is computed (one BLAKE3 compression per key, sixteen hashes to a
// pass) and the filter blocks they fall in are prefetched; then the forms
// are tested. The filter probes are cache misses at any index size; issued
// together they overlap instead of each waiting for memory in turn, and the
// first pass runs a block ahead of the second so that the lines have
// arrived when they are tested. The forms that may be present are then
// searched a span of queries at a time in the order of their stored hashes
// (neighbouring searches share pages), and what they find is checked and
// written in the order of the queries.
#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "index/impl.hpp"
#include "index/index.hpp"
#include "shard/keys.hpp"

namespace dedupd::index {

using namespace records;
using detail::Cursor;

namespace detail {

std::optional<ShardRef> shard_ref(const Hash& shard_hash, const MDB_val& record) {
  // The fixed head of a ShardRecord (records.hpp): state, flags, ...,
  // expiry at 8, key at 72; the paths follow, then the CAS when scoped.
  if (record.mv_size < kShardRecordHead) return std::nullopt;
  auto p = static_cast<const std::uint8_t*>(record.mv_data);
  ShardRef r;
  r.shard = shard_hash;
  std::uint8_t flags = p[1];
  r.keyed = flags & 2;
  if (flags & 4) r.expiry = shard::load_u64(p + 8);
  r.key = Hash::from_bytes({p + 72, 32});
  r.set_aside = flags & kShardSetAside;
  if (flags & kShardScoped) {
    std::size_t pos = kShardRecordHead, n = record.mv_size;
    std::uint32_t paths = shard::load_u32(p + 4);
    for (std::uint32_t i = 0; i < paths; ++i) {
      if (n - pos < 4) return std::nullopt;
      std::uint32_t len = shard::load_u32(p + pos);
      if (n - pos - 4 < len) return std::nullopt;
      pos += 4 + std::size_t(len);
    }
    if (n - pos < 4) return std::nullopt;
    std::uint32_t len = shard::load_u32(p + pos);
    if (n - pos - 4 < len) return std::nullopt;
    r.cas.assign(reinterpret_cast<const char*>(p + pos + 4), len);
  }
  return r;
}

}  // namespace detail

namespace {

// Everything one snapshot needs to answer chunk queries.
class ChunkReader {
 public:
  ChunkReader(const OpenIndex& im, lmdb::ReadTxn& txn, BatchResult& out)
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
    for (std::size_t at = 0; at < raws.size(); at += kSortSpan)
      if (int rc = query_span(raws.subspan(at, std::min(kSortSpan, raws.size() - at)))) return rc;
    return 0;
  }

 private:
  // Queries whose searches are made in the order of their stored hashes
  // (about 16 per chunk-table key at the most, so neighbours share pages).
  static constexpr std::size_t kSortSpan = 4096;
  // Queries per block of the first passes: their forms (5 with 4 keys) and
  // filter lines stay in L1 between them.
  static constexpr std::size_t kBlock = 32;

  // A search to make: a stored form the filters let through.
  struct Search {
    std::uint64_t order_key;  // the stored hash's first bytes: the search order
    std::uint32_t form;       // query * forms per query + which form
    bool recent;              // the recent table, else the main one
    Hash stored;
  };
  // A duplicate a search found; `rank` keeps the answer's order: by query,
  // form, recent table before main, then the duplicates' own order.
  struct Candidate {
    std::uint64_t rank;
    std::uint32_t search;  // in searches_
    std::uint32_t xorb;
    std::uint32_t index;
  };

  int query_span(std::span<const Hash> raws) {
    const std::size_t per_query = 1 + hashers_.size();
    const std::size_t blocks = (raws.size() + kBlock - 1) / kBlock;
    // Forms are laid out `stride_` queries wide: a single GET's one query
    // would otherwise have 2 x 32 x 5 forms (10 KiB) allocated and zeroed
    // for its 5.
    stride_ = std::min(kBlock, raws.size());
    forms_.resize((blocks > 1 ? 2 : 1) * stride_ * per_query);
    searches_.clear();
    candidates_.clear();
    auto block_at = [&](std::size_t b) { return raws.subspan(b * kBlock, std::min(kBlock, raws.size() - b * kBlock)); };
    // A block's forms: form k of query i at [k * stride_ + i].
    auto forms_of = [&](std::size_t b) { return &forms_[(b & 1) * stride_ * per_query]; };
    // Passes 1 and 2 a block at a time: the forms, then which to search.
    // The next block's forms are computed, and their filter lines sent for,
    // before this block's are tested: its lines then had a whole block of
    // hashing to arrive.
    if (blocks) compute_forms(block_at(0), forms_of(0));
    for (std::size_t b = 0; b < blocks; ++b) {
      if (b + 1 < blocks) compute_forms(block_at(b + 1), forms_of(b + 1));
      const Hash* forms = forms_of(b);
      const std::size_t n = block_at(b).size();
      for (std::size_t k = 0; k < per_query; ++k)
        for (std::size_t i = 0; i < n; ++i) {
          const Hash& stored = forms[k * stride_ + i];
          auto [in_recent, in_main] = classify(stored);
          const auto order_key = load_be64(stored.data());
          const auto form = std::uint32_t((b * kBlock + i) * per_query + k);
          if (in_recent) searches_.push_back({order_key, form, true, stored});
          if (in_main) searches_.push_back({order_key, form, false, stored});
        }
    }
    // Pass 3: the searches in hash order.
    std::sort(searches_.begin(), searches_.end(),
              [](const Search& a, const Search& b) { return a.order_key < b.order_key; });
    for (std::uint32_t s = 0; s < searches_.size(); ++s)
      if (int rc = search(s)) return rc;
    // Pass 4: what they found, checked and written in the order of the queries.
    std::sort(candidates_.begin(), candidates_.end(),
              [](const Candidate& a, const Candidate& b) { return a.rank < b.rank; });
    const Candidate* c = candidates_.data();
    const Candidate* end = c + candidates_.size();
    for (std::size_t q = 0; q < raws.size(); ++q) {
      const std::uint32_t begin = std::uint32_t(out_.locations.size());
      for (; c != end && searches_[c->search].form / per_query == q; ++c)
        if (int rc = check(*c, per_query, begin)) return rc;
      out_.first.push_back(std::uint32_t(out_.locations.size()));
    }
    return 0;
  }

  struct Cached {
    XorbRecordView rec;
    std::uint32_t shard_set;
  };

  // Every stored form of each query of `block` (the keyed ones sixteen
  // queries at a time per key), their filter lines on their way.
  void compute_forms(std::span<const Hash> block, Hash* forms) {
    std::copy(block.begin(), block.end(), forms);
    for (std::size_t k = 0; k < hashers_.size(); ++k) hashers_[k].hash_many(block, forms + (k + 1) * stride_);
    for (std::size_t k = 0; k <= hashers_.size(); ++k)
      for (std::size_t i = 0; i < block.size(); ++i) prefetch(forms[k * stride_ + i]);
  }

  void prefetch(const Hash& stored) const {
    if (filters_.all) filters_.all->prefetch(stored.data());
    if (filters_.recent && !recent_empty_) filters_.recent->prefetch(stored.data());
  }

  // Which tables may hold the stored form: {recent, main}.
  std::pair<bool, bool> classify(const Hash& stored) const {
    if (filters_.all && !filters_.all->may_contain(stored.data())) return {false, false};
    return {!recent_empty_ && (!filters_.recent || filters_.recent->may_contain(stored.data())), true};
  }

  // Every duplicate of search `s` whose 32 bits match, as candidates.
  int search(std::uint32_t s) {
    const Search& what = searches_[s];
    auto probe_value = chunk_probe(what.stored.data());
    MDB_val k = val(what.stored.data(), kChunkKeyBytes), v = val(probe_value.data(), probe_value.size());
    MDB_cursor* table = what.recent ? recent_ : chunks_;
    std::uint64_t rank = (std::uint64_t(what.form) * 2 + (what.recent ? 0 : 1)) << 32;
    int rc = mdb_cursor_get(table, &k, &v, MDB_GET_BOTH_RANGE);
    while (rc == 0) {
      auto dup = static_cast<const std::uint8_t*>(v.mv_data);
      if (!chunk_width_known(v.mv_size) || !chunk_value_matches(dup, what.stored.data())) break;
      candidates_.push_back({rank++, s, chunk_value_xorb(dup, v.mv_size), chunk_value_index(dup, v.mv_size)});
      rc = mdb_cursor_get(table, &k, &v, MDB_NEXT_DUP);
    }
    return rc == MDB_NOTFOUND ? 0 : rc;
  }

  // A candidate is a location when its xorb says so: the full 32 bytes
  // decide, and the key must be the one its form was hashed with.
  int check(const Candidate& c, std::size_t per_query, std::uint32_t begin) {
    const Search& what = searches_[c.search];
    const std::size_t form = what.form % per_query;
    const Key* key = form == 0 ? nullptr : &hashers_[form - 1].key();
    const Cached* x;
    if (int rc = xorb(c.xorb, x)) return rc;
    if (x && c.index < x->rec.num_chunks() &&
        std::memcmp(x->rec.chunk_hash_bytes(c.index), what.stored.data(), 32) == 0 &&
        (key ? std::memcmp(x->rec.key_bytes(), key->data(), 32) == 0 : !x->rec.keyed()))
      emit(*x, c.index, begin);
    return 0;
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
    std::uint32_t set = 0;
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

  const OpenIndex& im_;
  lmdb::ReadTxn& rtxn_;
  MDB_txn* txn_;
  BatchResult& out_;
  MDB_cursor *recent_ = nullptr, *chunks_ = nullptr, *xorb_shards_ = nullptr, *keys_cur_ = nullptr;
  OpenIndex::Filters filters_;
  bool recent_empty_ = false;
  std::vector<shard::KeyedChunkHasher> hashers_;  // one per live key
  std::vector<Hash> forms_;
  std::size_t stride_ = kBlock;  // queries a row of forms_ holds
  std::vector<Search> searches_;
  std::vector<Candidate> candidates_;
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
