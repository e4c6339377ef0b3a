// The invariant checker: recomputes from the shard records what every other
// table must hold, and compares. One read snapshot, every table once.
#include <map>
#include <set>
#include <unordered_map>

#include "index/impl.hpp"
#include "index/index.hpp"
#include "index/outbox_txn.hpp"

namespace dedupd::index {

using namespace records;
using detail::Cursor;

namespace {

constexpr std::size_t kMaxProblems = 1000;

class Checker {
 public:
  Checker(const OpenIndex& im, MDB_txn* txn) : d_(im.dbs), txn_(txn) {}

  int run() {
    int rc;
    if ((rc = shards()) || (rc = xorb_shards()) || (rc = xorbs()) || (rc = xorb_ids()) || (rc = chunks()) ||
        (rc = files()) || (rc = keyed_and_expiry()) || (rc = counters()) || (rc = expired_forms()))
      return rc;
    return 0;
  }
  std::vector<std::string> problems;

 private:
  void problem(std::string p) {
    if (problems.size() < kMaxProblems) problems.push_back(std::move(p));
  }

  // Compact and dense records keep only where each chunk starts (its size is
  // the distance to the next start, or to bytes_in_xorb): true when the
  // starts run up from 0 and none is past bytes_in_xorb, as every writer
  // lays them out. A start below the one before makes a size near 4 GiB.
  static bool ranges_tile(const XorbRecordView& rec) {
    std::uint64_t at = 0;
    for (std::uint32_t i = 0; i < rec.num_chunks(); ++i) {
      std::uint32_t start, unpacked, flags;
      rec.chunk_range(i, start, unpacked, flags);
      if (start != at) return false;
      at += unpacked;
    }
    return at == rec.header().bytes_in_xorb;
  }

  // Calls fn(key, value) for every item (every duplicate) of a table.
  template <class F>
  int walk(MDB_dbi dbi, F&& fn) {
    Cursor c;
    if (int rc = c.open(txn_, dbi)) return rc;
    MDB_val k, v;
    int rc;
    for (rc = c.move(&k, &v, MDB_FIRST); rc == 0; rc = c.move(&k, &v, MDB_NEXT)) fn(k, v);
    return rc == MDB_NOTFOUND ? 0 : rc;
  }

  static Hash hash_of(const MDB_val& v) { return Hash::from_bytes(span_of(v)); }

  int shards() {
    int rc = walk(d_.shards, [&](const MDB_val& k, const MDB_val& v) {
      if (k.mv_size != 32) return problem("shards: key of " + std::to_string(k.mv_size) + " bytes");
      Hash h = hash_of(k);
      auto r = decode_shard(v);
      if (!r) return problem("shard " + h.to_string() + ": record does not decode");
      ++state_count_[r->state];
      records_[h] = *r;
    });
    if (rc) return rc;
    rc = walk(d_.shard_refs, [&](const MDB_val& k, const MDB_val& v) {
      Hash h = hash_of(k);
      auto it = records_.find(h);
      if (it == records_.end()) return problem("shard_refs of " + h.to_string() + " without a shard record");
      if (it->second.state != ShardState::live)
        return problem("shard " + h.to_string() + " is " + to_string(it->second.state) + " but keeps shard_refs");
      auto refs = decode_refs(v);
      if (!refs) return problem("shard_refs of " + h.to_string() + " does not decode");
      has_refs_.insert(h);
      for (XorbId id : refs->xorbs)
        if (!expected_xorb_shards_[id].insert(h).second)
          problem("shard " + h.to_string() + " lists xorb id " + std::to_string(id) + " twice");
      for (const Hash& f : refs->files)
        if (!expected_file_shards_[f].insert(h).second)
          problem("shard " + h.to_string() + " lists file " + f.to_string() + " twice");
    });
    if (rc) return rc;
    for (const auto& [h, r] : records_)
      if (r.state == ShardState::live && !has_refs_.count(h))
        problem("live shard " + h.to_string() + " has no shard_refs (half ingested?)");
    return 0;
  }

  int xorb_shards() {
    std::map<XorbId, std::set<Hash>> actual;
    int rc = walk(d_.xorb_shards, [&](const MDB_val& k, const MDB_val& v) {
      if (k.mv_size != 4 || v.mv_size != 32) return problem("xorb_shards: item of the wrong size");
      actual[load_be32(static_cast<const std::uint8_t*>(k.mv_data))].insert(hash_of(v));
    });
    if (rc) return rc;
    if (actual != expected_xorb_shards_) {
      for (const auto& [id, set] : actual) {
        auto it = expected_xorb_shards_.find(id);
        if (it == expected_xorb_shards_.end() || it->second != set)
          problem("xorb id " + std::to_string(id) + ": refcount " + std::to_string(set.size()) +
                  " does not match the live shards listing it (" +
                  std::to_string(it == expected_xorb_shards_.end() ? 0 : it->second.size()) + ")");
      }
      for (const auto& [id, set] : expected_xorb_shards_)
        if (!actual.count(id))
          problem("xorb id " + std::to_string(id) + " is listed by " + std::to_string(set.size()) +
                  " live shard(s) but has no refcount entries");
    }
    return 0;
  }

  int xorbs() {
    return walk(d_.xorbs, [&](const MDB_val& k, const MDB_val& v) {
      if (k.mv_size != 4) return problem("xorbs: key of the wrong size");
      XorbId id = load_be32(static_cast<const std::uint8_t*>(k.mv_data));
      max_id_ = std::max(max_id_, id);
      auto rec = XorbRecordView::decode(v);
      if (!rec) return problem("xorb id " + std::to_string(id) + ": record does not decode");
      xorbs_[id] = *rec;
      total_chunks_ += rec->num_chunks();
      if (rec->layout() != XorbLayout::verbatim && !ranges_tile(*rec))
        problem("xorb id " + std::to_string(id) + ": its chunk ranges do not run up from 0 to bytes_in_xorb");
      if (!expected_xorb_shards_.count(id))
        problem("dangling xorb id " + std::to_string(id) + " (" + rec->xorb_hash().to_string() +
                "): no live shard holds it");
    });
  }

  int xorb_ids() {
    std::set<XorbId> seen;
    int rc = walk(d_.xorb_ids, [&](const MDB_val& k, const MDB_val& v) {
      if (k.mv_size != 32 || v.mv_size != 4) return problem("xorb_ids: item of the wrong size");
      XorbId id = load_be32(static_cast<const std::uint8_t*>(v.mv_data));
      auto it = xorbs_.find(id);
      if (it == xorbs_.end()) return problem("xorb_ids names missing xorb id " + std::to_string(id));
      if (it->second.xorb_hash() != hash_of(k)) problem("xorb_ids: id " + std::to_string(id) + " under another hash");
      seen.insert(id);
    });
    if (rc) return rc;
    for (const auto& [id, rec] : xorbs_)
      if (!seen.count(id)) problem("xorb id " + std::to_string(id) + " is missing from xorb_ids");
    for (const auto& [id, set] : expected_xorb_shards_)
      if (!xorbs_.count(id)) problem("live shards list xorb id " + std::to_string(id) + " which has no record");
    return 0;
  }

  int chunks() {
    std::unordered_map<XorbId, std::uint64_t> per_xorb;
    std::uint64_t total = 0;
    auto entry = [&](const MDB_val& k, const MDB_val& v) {
      ++total;
      // Schema 6 has only 10-byte entries; an older one (read-only, or an
      // upgrade a kill interrupted) may still hold 11- or 12-byte keys.
      const bool width_ok = d_.version >= 6 ? v.mv_size == kChunkValueBytes : chunk_width_known(v.mv_size);
      if (k.mv_size != kChunkKeyBytes || !width_ok) return problem("chunks: item of the wrong size");
      auto dup = static_cast<const std::uint8_t*>(v.mv_data);
      XorbId id = chunk_value_xorb(dup, v.mv_size);
      std::uint32_t index = chunk_value_index(dup, v.mv_size);
      auto it = xorbs_.find(id);
      if (it == xorbs_.end()) return problem("orphan chunk entry: xorb id " + std::to_string(id) + " does not exist");
      if (index >= it->second.num_chunks()) return problem("chunk entry past the end of xorb id " + std::to_string(id));
      const std::uint8_t* stored = it->second.chunk_hash_bytes(index);
      if (std::memcmp(stored, k.mv_data, kChunkKeyBytes) != 0 || !chunk_value_matches(dup, stored))
        return problem("chunk entry of xorb id " + std::to_string(id) + " #" + std::to_string(index) +
                       " does not match the stored hash");
      ++per_xorb[id];
    };
    // An entry in both tables would count twice and show below.
    int rc = walk(d_.chunks, entry);
    if (rc || (rc = walk(d_.chunks_recent, entry))) return rc;
    for (const auto& [id, rec] : xorbs_) {
      auto n = per_xorb.count(id) ? per_xorb[id] : 0;
      if (n != rec.num_chunks())
        problem("xorb id " + std::to_string(id) + " has " + std::to_string(rec.num_chunks()) + " chunks but " +
                std::to_string(n) + " chunk entries");
    }
    if (total != total_chunks_)
      problem("chunk table holds " + std::to_string(total) + " entries, the xorbs " + std::to_string(total_chunks_));
    return 0;
  }

  int files() {
    std::map<Hash, std::set<Hash>> actual;
    int rc = walk(d_.file_shards, [&](const MDB_val& k, const MDB_val& v) {
      if (k.mv_size != 32 || v.mv_size != 32) return problem("file_shards: item of the wrong size");
      actual[hash_of(k)].insert(hash_of(v));
    });
    if (rc) return rc;
    if (actual != expected_file_shards_) problem("file refcounts do not match the live shards listing the files");
    std::set<std::pair<Hash, Hash>> expected_sha;
    std::size_t nfiles = 0;
    rc = walk(d_.files, [&](const MDB_val& k, const MDB_val& v) {
      ++nfiles;
      Hash fh = hash_of(k);
      auto block = decode_file(v);
      if (!block) return problem("file " + fh.to_string() + ": record does not decode");
      if (block->hash() != fh) problem("file " + fh.to_string() + ": record holds another hash");
      if (!actual.count(fh)) problem("dangling file " + fh.to_string() + ": no live shard holds it");
      if (auto sha = block->sha256()) expected_sha.insert({*sha, fh});
    });
    if (rc) return rc;
    if (nfiles != expected_file_shards_.size())
      problem("files table holds " + std::to_string(nfiles) + " files, live shards list " +
              std::to_string(expected_file_shards_.size()));
    std::set<std::pair<Hash, Hash>> sha;
    rc = walk(d_.sha256, [&](const MDB_val& k, const MDB_val& v) { sha.insert({hash_of(k), hash_of(v)}); });
    if (rc) return rc;
    if (sha != expected_sha) problem("sha256 table does not match the files' sha256 extensions");
    return 0;
  }

  int keyed_and_expiry() {
    std::set<std::pair<Hash, Hash>> keys, expected_keys;
    std::set<std::pair<std::uint64_t, Hash>> expiry, expected_expiry;
    for (const auto& [h, r] : records_) {
      if (r.state != ShardState::live) continue;
      if (r.keyed) expected_keys.insert({r.key, h});
      if (r.has_expiry) expected_expiry.insert({r.expiry, h});
    }
    int rc = walk(d_.keys, [&](const MDB_val& k, const MDB_val& v) { keys.insert({hash_of(k), hash_of(v)}); });
    if (rc) return rc;
    if (keys != expected_keys) problem("keys table does not match the live keyed shards");
    rc = walk(d_.expiry, [&](const MDB_val& k, const MDB_val& v) {
      if (k.mv_size != 8) return problem("expiry: key of the wrong size");
      expiry.insert({load_be64(static_cast<const std::uint8_t*>(k.mv_data)), hash_of(v)});
    });
    if (rc) return rc;
    if (expiry != expected_expiry) problem("expiry table does not match the live expiring shards");
    return 0;
  }

  int counters() {
    std::uint64_t live, expired, removed, rejected, next_id;
    int rc;
    if ((rc = schema::get_u64(txn_, d_.meta, schema::kCountLive, live)) ||
        (rc = schema::get_u64(txn_, d_.meta, schema::kCountExpired, expired)) ||
        (rc = schema::get_u64(txn_, d_.meta, schema::kCountRemoved, removed)) ||
        (rc = schema::get_u64(txn_, d_.meta, schema::kCountRejected, rejected)) ||
        (rc = schema::get_u64(txn_, d_.meta, schema::kNextXorbId, next_id)))
      return rc;
    if (live != state_count_[ShardState::live] || expired != state_count_[ShardState::expired] ||
        removed != state_count_[ShardState::removed])
      problem("shard counters (" + std::to_string(live) + "/" + std::to_string(expired) + "/" +
              std::to_string(removed) + ") do not match the records (" +
              std::to_string(state_count_[ShardState::live]) + "/" + std::to_string(state_count_[ShardState::expired]) +
              "/" + std::to_string(state_count_[ShardState::removed]) + ")");
    if (!xorbs_.empty() && next_id <= max_id_) problem("next_xorb_id would reuse a live id");
    std::uint64_t nrej = 0;
    rc = walk(d_.sources, [&](const MDB_val&, const MDB_val& v) {
      auto s = decode_source(v);
      if (!s) return problem("a source record does not decode");
      if (s->rejected) ++nrej;
    });
    if (rc) return rc;
    if (nrej != rejected) problem("rejected counter does not match the sources");
    return 0;
  }

  // Forms are kept for expired shards only (schema 4 on).
  int expired_forms() {
    if (d_.version < 4) return 0;
    return walk(d_.expired_forms, [&](const MDB_val& k, const MDB_val& v) {
      if (k.mv_size != 32) return problem("expired_forms: key of " + std::to_string(k.mv_size) + " bytes");
      Hash h = hash_of(k);
      if (!ExpiredFormsView::decode(v)) return problem("expired forms of " + h.to_string() + " do not decode");
      auto it = records_.find(h);
      if (it == records_.end()) return problem("expired forms of " + h.to_string() + " without a shard record");
      if (it->second.state != ShardState::expired)
        problem("shard " + h.to_string() + " is " + to_string(it->second.state) + " but keeps expired forms");
    });
  }

  const schema::Dbs& d_;
  MDB_txn* txn_;
  std::map<Hash, ShardRecord> records_;
  std::map<ShardState, std::uint64_t> state_count_;
  std::set<Hash> has_refs_;
  std::map<XorbId, std::set<Hash>> expected_xorb_shards_;
  std::map<Hash, std::set<Hash>> expected_file_shards_;
  std::map<XorbId, XorbRecordView> xorbs_;
  std::uint64_t total_chunks_ = 0;
  XorbId max_id_ = 0;
};

}  // namespace

Result<std::vector<std::string>> Index::check_invariants() const {
  auto txn = impl_->env->begin_read();
  if (!txn) return txn.error();
  Checker c(*impl_, txn->get());
  if (int rc = c.run()) return lmdb::error_of(rc, "checking invariants");
  if (impl_->dbs.version == 1) return std::move(c.problems);  // no outbox before schema 2
  if (int rc = detail::outbox_check(*impl_, txn->get(), c.problems)) return lmdb::error_of(rc, "checking the outbox");
  return std::move(c.problems);
}

}  // namespace dedupd::index
