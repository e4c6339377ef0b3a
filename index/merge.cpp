// Moving chunk entries from chunks_recent into chunks (see tables.hpp for
// why two tables). A step moves whole key bytes, so each entry is in exactly
// one table at every commit, and lookups probe both.
#include <cstring>
#include <span>
#include <vector>

#include "index/duplicates.hpp"
#include "index/impl.hpp"
#include "index/index.hpp"
#include "index/tuning.hpp"

namespace dedupd::index {

std::uint64_t detail::g_merge_step_entries = std::uint64_t(1) << 19;
std::uint64_t detail::g_merge_rewrite_entries = std::uint64_t(1) << 21;

using namespace records;
using detail::ChunkKey;
using detail::copy_duplicates;
using detail::Cursor;
using detail::key_entries;

namespace {

// 1/16 of the big table per transaction, or fewer keys once they hold
// g_merge_step_entries. A step dirties nearly every page of the keys it
// merges (the new entries fall between the old ones), and without
// MDB_WRITEMAP LMDB mallocs each dirty page and keeps the single ones for
// reuse: 1/16 of a 10 M-entry table is ~11 MB, of 100 M ~110 MB; 2^19
// entries are ~9 MB of pages at any size.
constexpr unsigned kKeysPerStep = 16;

// A step's copies of one key's duplicates, reused from key to key.
struct MergeBuffers {
  std::vector<std::uint8_t> recent, main, run;
};

int entries(MDB_txn* txn, MDB_dbi dbi, std::uint64_t& n) {
  MDB_stat st;
  int rc = mdb_stat(txn, dbi, &st);
  n = st.ms_entries;
  return rc;
}

// Puts both sorted runs of records under `key`, in order, each record once
// (an entry can be in both tables when a shard came back while its first
// copy was merged), appended a run of kPutRecords at a time.
int put_merged(const Cursor& main, const ChunkKey& key, const std::vector<std::uint8_t>& a,
               const std::vector<std::uint8_t>& b, std::vector<std::uint8_t>& run) {
  constexpr std::size_t w = kChunkValueBytes, kPutRecords = 4096;
  run.resize(kPutRecords * w);
  std::size_t i = 0, j = 0, n = 0;
  while (i < a.size() || j < b.size()) {
    int d = i == a.size() ? 1 : j == b.size() ? -1 : std::memcmp(&a[i], &b[j], w);
    std::memcpy(&run[n++ * w], d <= 0 ? &a[i] : &b[j], w);
    if (d <= 0) i += w;
    if (d >= 0) j += w;
    if (n == kPutRecords || (i == a.size() && j == b.size())) {
      if (int rc = detail::put_duplicates(main, key, std::span(run.data(), n * w), w, MDB_APPENDDUP)) return rc;
      n = 0;
    }
  }
  return 0;
}

// Moves the recent duplicates of `key` (the recent cursor's current key)
// into the main table. Merged in place, the new entries fall between the
// old ones and split pages, which then stay two thirds full on average.
// When they are at least 1/kRewriteShare of the key's old entries, every
// page of the key is rewritten anyway: then the key is written afresh, all
// in order, and LMDB fills each page before it starts the next.
int merge_key(const Cursor& recent, const Cursor& main, const ChunkKey& key, std::uint64_t in_recent,
              std::uint64_t in_main, MergeBuffers& buf) {
  constexpr std::uint64_t kRewriteShare = 64;
  buf.recent.clear();
  if (int rc = copy_duplicates(recent, key, in_recent, buf.recent)) return rc;
  if (in_main > detail::g_merge_rewrite_entries || in_recent * kRewriteShare < in_main)
    return detail::put_duplicates(main, key, buf.recent, kChunkValueBytes, 0);
  buf.main.clear();
  if (in_main > 0) {
    MDB_val k = val(key.data(), key.size()), v;
    int rc;
    if ((rc = copy_duplicates(main, key, in_main, buf.main))) return rc;
    if ((rc = main.move(&k, &v, MDB_SET)) || (rc = mdb_cursor_del(main.get(), MDB_NODUPDATA))) return rc;
  }
  return put_merged(main, key, buf.main, buf.recent, buf.run);
}

// Moves up to kKeysPerStep key bytes of the recent table, from key byte
// `from` on (fewer past g_merge_step_entries); `next` gets the key byte after
// the last one moved (0x100: none left from `from` on), `left` what remains
// in recent.
int merge_step(const OpenIndex& im, MDB_txn* txn, unsigned from, unsigned& next, std::uint64_t& left) {
  Cursor recent, main;
  int rc;
  if ((rc = recent.open(txn, im.dbs.chunks_recent)) || (rc = main.open(txn, im.dbs.chunks))) return rc;
  MergeBuffers buf;
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
    ChunkKey key;
    if (k.mv_size != key.size()) return MDB_CORRUPTED;
    std::memcpy(key.data(), k.mv_data, key.size());
    std::uint64_t in_recent = 0, in_main = 0;
    if ((rc = key_entries(recent, key, in_recent)) || (rc = key_entries(main, key, in_main))) return rc;
    if (n > 0 && touched + in_recent + in_main > detail::g_merge_step_entries) break;
    touched += in_recent + in_main;
    if ((rc = merge_key(recent, main, key, in_recent, in_main, buf))) return rc;
    MDB_val dk = val(key.data(), key.size()), dv;
    if ((rc = recent.move(&dk, &dv, MDB_SET))) return rc;
    if ((rc = mdb_cursor_del(recent.get(), MDB_NODUPDATA))) return rc;
    next = unsigned(key[0]) + 1;
  }
  return entries(txn, im.dbs.chunks_recent, left);
}

}  // namespace

Status OpenIndex::merge_if_due(bool force, std::chrono::steady_clock::time_point until) {
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
