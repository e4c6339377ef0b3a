// The scrub (Index::scrub): what check_invariants checks of one record at a
// time, in slices. Whole-index sums (refcounts, counters) are left to
// check_invariants: they need every table at once.
#include <chrono>
#include <cstring>
#include <mutex>
#include <optional>

#include "index/impl.hpp"
#include "index/index.hpp"

namespace dedupd::index {

using namespace records;
using detail::Cursor;
using schema::Dbs;

namespace {

// Every table, the four the checks read first (a damaged chunk entry is
// what a query would serve), then the others, walked for LMDB's own
// complaints (a page of the wrong type, a page past the end) and, for the
// files, their records' decoding.
enum class Check : std::uint8_t { shard, xorb, chunk, file, walk };
struct Table {
  const char* name;
  MDB_dbi Dbs::*member;
  bool dupsort;
  Check check;
  std::uint32_t since;  // the schema version that added it
};
constexpr Table kTables[] = {
    {"shards", &Dbs::shards, false, Check::shard, 1},
    {"xorbs", &Dbs::xorbs, false, Check::xorb, 1},
    {"chunks", &Dbs::chunks, true, Check::chunk, 1},
    {"chunks_recent", &Dbs::chunks_recent, true, Check::chunk, 1},
    {"files", &Dbs::files, false, Check::file, 1},
    {"meta", &Dbs::meta, false, Check::walk, 1},
    {"shard_refs", &Dbs::shard_refs, false, Check::walk, 1},
    {"expiry", &Dbs::expiry, true, Check::walk, 1},
    {"keys", &Dbs::keys, true, Check::walk, 1},
    {"xorb_ids", &Dbs::xorb_ids, true, Check::walk, 1},
    {"xorb_shards", &Dbs::xorb_shards, true, Check::walk, 1},
    {"file_shards", &Dbs::file_shards, true, Check::walk, 1},
    {"sha256", &Dbs::sha256, true, Check::walk, 1},
    {"sources", &Dbs::sources, false, Check::walk, 1},
    {"outbox", &Dbs::outbox, false, Check::walk, 2},
    {"parked", &Dbs::parked, false, Check::walk, 3},
    {"expired_forms", &Dbs::expired_forms, false, Check::walk, 4},
};
constexpr unsigned kTableCount = sizeof kTables / sizeof kTables[0];

std::vector<std::uint8_t> bytes_of(const MDB_val& v) {
  auto* p = static_cast<const std::uint8_t*>(v.mv_data);
  return {p, p + v.mv_size};
}

// Positions `c` on the first item after (key, value), or the first item
// when not resuming; MDB_NOTFOUND at the end of the table.
int seek_after(Cursor& c, bool dupsort, const Index::ScrubPosition& pos, MDB_val& k, MDB_val& v) {
  if (!pos.resume) return c.move(&k, &v, MDB_FIRST);
  k = {pos.key.size(), const_cast<std::uint8_t*>(pos.key.data())};
  if (dupsort) {
    v = {pos.value.size(), const_cast<std::uint8_t*>(pos.value.data())};
    int rc = c.move(&k, &v, MDB_GET_BOTH_RANGE);
    if (rc == 0) {
      if (v.mv_size == pos.value.size() && std::memcmp(v.mv_data, pos.value.data(), v.mv_size) == 0)
        return c.move(&k, &v, MDB_NEXT);
      return 0;
    }
    if (rc != MDB_NOTFOUND) return rc;
    // No duplicate at or after it under that key (or no such key now).
    k = {pos.key.size(), const_cast<std::uint8_t*>(pos.key.data())};
    rc = c.move(&k, &v, MDB_SET_RANGE);
    if (rc != 0) return rc;
    if (k.mv_size == pos.key.size() && std::memcmp(k.mv_data, pos.key.data(), k.mv_size) == 0)
      return c.move(&k, &v, MDB_NEXT_NODUP);
    return 0;
  }
  int rc = c.move(&k, &v, MDB_SET_RANGE);
  if (rc == 0 && k.mv_size == pos.key.size() && std::memcmp(k.mv_data, pos.key.data(), k.mv_size) == 0)
    return c.move(&k, &v, MDB_NEXT);
  return rc;
}

}  // namespace

Result<std::vector<std::string>> Index::scrub(ScrubPosition& pos, std::size_t max_items,
                                              std::chrono::steady_clock::duration max_time) const {
  using Clock = std::chrono::steady_clock;
  if (pos.done) pos = ScrubPosition{};
  // A chunk entry's check is a random page read, so a count of items alone
  // does not bound a slice on an index the page cache has dropped; the
  // caller sets the pace between slices. The clock is read once an item,
  // little beside the item's own search.
  const bool timed = max_time != Clock::duration::max();
  const Clock::time_point deadline = timed ? Clock::now() + max_time : Clock::time_point::max();
  bool out_of_time = false;
  {
    // A write under way goes first. On a 2-core host a slice beside a
    // purge's one long transaction took a core and the cache from it: the
    // purge of a 1 Mi-entry shard right after a start took 2.85 s against
    // 1.30 s with the scrub off. The lock is let go at once, so a write
    // never waits for a slice; one that starts during the slice overlaps
    // that slice only.
    std::unique_lock writing(impl_->write_mu, std::try_to_lock);
    if (!writing.owns_lock()) return std::vector<std::string>{};
  }
  auto txn = impl_->env->begin_read();
  if (!txn) return txn.error();
  const auto& d = impl_->dbs;
  std::vector<std::string> problems;
  // The last xorb record looked up: chunk entries of one xorb cluster by key
  // byte only, so this saves little, but costs nothing.
  std::optional<XorbId> cached_id;
  std::optional<XorbRecordView> cached;
  std::size_t items = 0;
  while (pos.table < kTableCount && items < max_items && !out_of_time) {
    const Table& table = kTables[pos.table];
    if (d.version < table.since) {
      ++pos.table;
      continue;
    }
    const MDB_dbi dbi = d.*table.member;
    const bool dupsort = table.dupsort;
    Cursor c;
    if (int rc = c.open(txn->get(), dbi)) return lmdb::error_of(rc, "scrub: opening a cursor");
    MDB_val k{}, v{};
    int rc = seek_after(c, dupsort, pos, k, v);
    // After MDB_GET_BOTH_RANGE `k` still points into pos.key (LMDB sets
    // only the data): each item is read through copies made before pos
    // takes them, never through a buffer the assignment frees. The copies
    // outlive an iteration: on damaged pages MDB_NEXT has been seen to
    // succeed and leave `k` as it was, pointing at the last copy (ASan, in
    // DamageTest.ScribbledPagesAreFoundAndRebuilt).
    std::vector<std::uint8_t> key_copy, value_copy;
    for (; rc == 0 && items < max_items && !out_of_time; rc = c.move(&k, &v, MDB_NEXT)) {
      ++items;
      // The item in hand is still checked: a slice checks one at least.
      if (timed && Clock::now() >= deadline) out_of_time = true;
      std::vector<std::uint8_t> next_key = bytes_of(k);
      std::vector<std::uint8_t> next_value = dupsort ? bytes_of(v) : std::vector<std::uint8_t>{};
      key_copy.swap(next_key);
      value_copy.swap(next_value);
      k.mv_data = key_copy.data();
      if (dupsort) v.mv_data = value_copy.data();
      pos.key = key_copy;
      pos.value = value_copy;
      pos.resume = true;
      if (table.check == Check::walk) {
        continue;
      } else if (table.check == Check::file) {
        if (k.mv_size != 32 || !decode_file(v))
          problems.push_back("file " + (k.mv_size == 32 ? Hash::from_bytes(span_of(k)).to_string() : "?") +
                             ": record does not decode");
      } else if (table.check == Check::shard) {
        if (k.mv_size != 32) problems.push_back("shards: key of " + std::to_string(k.mv_size) + " bytes");
        else if (!decode_shard(v))
          problems.push_back("shard " + Hash::from_bytes(span_of(k)).to_string() + ": record does not decode");
      } else if (table.check == Check::xorb) {
        if (k.mv_size != 4) problems.push_back("xorbs: key of the wrong size");
        else if (!XorbRecordView::decode(v))
          problems.push_back("xorb id " + std::to_string(load_be32(static_cast<const std::uint8_t*>(k.mv_data))) +
                             ": record does not decode");
      } else {
        const bool width_ok = d.version >= 6 ? v.mv_size == kChunkValueBytes : chunk_width_known(v.mv_size);
        if (k.mv_size != kChunkKeyBytes || !width_ok) {
          problems.push_back(std::string(table.name) + ": item of the wrong size");
          continue;
        }
        auto dup = static_cast<const std::uint8_t*>(v.mv_data);
        const XorbId id = chunk_value_xorb(dup, v.mv_size);
        const std::uint32_t index = chunk_value_index(dup, v.mv_size);
        if (cached_id != id) {
          std::uint8_t key[4];
          store_be32(key, id);
          MDB_val xk{4, key}, xv{};
          int g = mdb_get(txn->get(), d.xorbs, &xk, &xv);
          if (g != 0 && g != MDB_NOTFOUND) return lmdb::error_of(g, "scrub: reading a xorb record");
          cached_id = id;
          cached = g == 0 ? XorbRecordView::decode(xv) : std::nullopt;
        }
        if (!cached) {
          problems.push_back("orphan chunk entry: xorb id " + std::to_string(id) + " does not exist");
        } else if (index >= cached->num_chunks()) {
          problems.push_back("chunk entry past the end of xorb id " + std::to_string(id));
        } else {
          const std::uint8_t* stored = cached->chunk_hash_bytes(index);
          if (std::memcmp(stored, k.mv_data, kChunkKeyBytes) != 0 || !chunk_value_matches(dup, stored))
            problems.push_back("chunk entry of xorb id " + std::to_string(id) + " #" + std::to_string(index) +
                               " does not match the stored hash");
        }
      }
      if (problems.size() >= 100) break;
    }
    if (rc != 0 && rc != MDB_NOTFOUND) return lmdb::error_of(rc, std::string("scrub: walking ") + table.name);
    if (problems.size() >= 100) break;
    if (rc == MDB_NOTFOUND) {
      ++pos.table;
      pos.resume = false;
      pos.key.clear();
      pos.value.clear();
    }
  }
  pos.items += items;
  pos.done = pos.table >= kTableCount;
  return problems;
}

}  // namespace dedupd::index
