// Moving chunk entries from chunks_recent into chunks (see schema.hpp for
// why two tables). A step moves whole key bytes, so each entry is in exactly
// one table at every commit, and lookups probe both.
#include <cstring>

#include "index/impl.hpp"
#include "index/tuning.hpp"

namespace dedupd::index {

std::uint64_t detail::g_merge_step_entries = std::uint64_t(1) << 19;

using namespace records;
using detail::Cursor;

namespace {

// 1/16 of the big table per transaction, or fewer keys once they hold
// g_merge_step_entries. A step dirties nearly every page of the keys it
// merges (the new entries fall between the old ones), and without
// MDB_WRITEMAP LMDB mallocs each dirty page and keeps the single ones for
// reuse: 1/16 of a 10 M-entry table is ~11 MB, of 100 M ~110 MB; 2^19
// entries are ~9 MB of pages at any size.
constexpr unsigned kKeysPerStep = 16;

int entries(MDB_txn* txn, MDB_dbi dbi, std::uint64_t& n) {
  MDB_stat st;
  int rc = mdb_stat(txn, dbi, &st);
  n = st.ms_entries;
  return rc;
}

// Adds the duplicates of `key` in the cursor's table to n.
int key_entries(const Cursor& c, const std::array<std::uint8_t, kChunkKeyBytes>& key, std::uint64_t& n) {
  MDB_val k = val(key.data(), key.size()), v;
  int rc = c.move(&k, &v, MDB_SET_KEY);
  if (rc == MDB_NOTFOUND) return 0;
  if (rc) return rc;
  std::size_t count = 0;
  if ((rc = mdb_cursor_count(c.get(), &count))) return rc;
  n += count;
  return 0;
}

// Moves up to kKeysPerStep key bytes of the recent table, from key byte
// `from` on (fewer past g_merge_step_entries); `next` gets the key byte after
// the last one moved (0x100: none left from `from` on), `left` what remains
// in recent.
int merge_step(const Index::Impl& im, MDB_txn* txn, unsigned from, unsigned& next, std::uint64_t& left) {
  Cursor recent, main;
  int rc;
  if ((rc = recent.open(txn, im.dbs.chunks_recent)) || (rc = main.open(txn, im.dbs.chunks))) return rc;
  std::vector<std::uint8_t> batch;
  std::uint64_t touched = 0;
  next = from;
  for (unsigned n = 0; n < kKeysPerStep && next <= 0xff; ++n) {
    static_assert(kChunkKeyBytes == 1);
    std::uint8_t at = std::uint8_t(next);
    MDB_val k = val(&at, 1), v;
    rc = recent.move(&k, &v, MDB_SET_RANGE);
    if (rc == MDB_NOTFOUND) {
      next = 0x100;
      break;
    }
    if (rc) return rc;
    std::array<std::uint8_t, kChunkKeyBytes> key;
    if (k.mv_size != key.size()) return MDB_CORRUPTED;
    std::memcpy(key.data(), k.mv_data, key.size());
    std::uint64_t cost = 0;
    if ((rc = key_entries(recent, key, cost)) || (rc = key_entries(main, key, cost))) return rc;
    if (n > 0 && touched + cost > detail::g_merge_step_entries) break;
    touched += cost;
    // Copy out a page of duplicates at a time: writing into `main` may move
    // the pages `v` points into.
    for (rc = recent.move(&k, &v, MDB_GET_MULTIPLE); rc == 0; rc = recent.move(&k, &v, MDB_NEXT_MULTIPLE)) {
      batch.assign(static_cast<const std::uint8_t*>(v.mv_data),
                   static_cast<const std::uint8_t*>(v.mv_data) + v.mv_size);
      // The page in one call (MDB_MULTIPLE): the key is found once for all.
      std::size_t values = batch.size() / kChunkValueBytes;
      if (values == 0) continue;
      MDB_val mk = val(key.data(), key.size()), mv[2] = {val(batch.data(), kChunkValueBytes), MDB_val{values, nullptr}};
      if (int r2 = mdb_cursor_put(main.get(), &mk, mv, MDB_MULTIPLE)) return r2;
      if (mv[1].mv_size != values) return MDB_CORRUPTED;
    }
    if (rc != MDB_NOTFOUND) return rc;
    MDB_val dk = val(key.data(), key.size()), dv;
    if ((rc = recent.move(&dk, &dv, MDB_SET))) return rc;
    if ((rc = mdb_cursor_del(recent.get(), MDB_NODUPDATA))) return rc;
    next = unsigned(key[0]) + 1;
  }
  return entries(txn, im.dbs.chunks_recent, left);
}

}  // namespace

Status Index::Impl::merge_if_due(bool force, std::chrono::steady_clock::time_point until) {
  for (;;) {
    std::uint64_t left = 0;
    unsigned next = 0;
    bool stepped = false;
    auto status = env->write(
        [&](MDB_txn* txn) -> lmdb::TxnResult {
          stepped = false;
          std::uint64_t recent, big;
          int rc;
          if ((rc = entries(txn, dbs.chunks_recent, recent)) || (rc = entries(txn, dbs.chunks, big))) return rc;
          if (recent == 0) return lmdb::TxnResult::rollback();
          if (!merge_from && !force && recent <= std::max<std::uint64_t>(options.merge_threshold, big / 16))
            return lmdb::TxnResult::rollback();
          stepped = true;
          // merge_recent() rounds again for what a sweep left behind.
          unsigned from = merge_from.value_or(0);
          return merge_step(*this, txn, from > 0xff ? 0 : from, next, left);
        },
        "merging recent chunk entries");
    if (!status) return status;  // merge_from as it was: the step is redone
    if (!stepped || left == 0) {
      if (stepped) reset_recent_filter();
      merge_from.reset();
      return Ok{};
    }
    if (next > 0xff && !force) {
      // The sweep is done. What ingest added behind it waits for the next
      // one: rounding again at once would rewrite the main table's pages
      // for a few entries each, and under steady ingest never end.
      merge_from.reset();
      refill_recent_filter();
      return Ok{};
    }
    merge_from = next;
    if (std::chrono::steady_clock::now() >= until) return Ok{};  // the rest after the next ingest
  }
}

Status Index::merge_recent() {
  std::lock_guard lock(impl_->write_mu);
  return impl_->merge_if_due(true, std::chrono::steady_clock::time_point::max());
}

}  // namespace dedupd::index
