// Internals shared by the index's .cpp files (not installed, not public).
#pragma once

#include <lmdb.h>

#include <array>
#include <chrono>
#include <cstring>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "index/chunk_filter.hpp"
#include "index/env.hpp"
#include "index/options.hpp"
#include "index/records.hpp"
#include "index/tables.hpp"
#include "index/tuning.hpp"
#include "index/types.hpp"

namespace dedupd::index {

// While build_chunk_filter() reads the chunk tables without the writer
// lock, what this process's writers commit meanwhile, for the build to add
// when it takes the lock back (OpenIndex::catch_up).
struct FilterCatchUp {
  std::vector<std::array<std::uint8_t, ChunkFilter::kFingerprintBytes>> fingerprints;
  std::uint64_t next_txn = 0;  // the id this process's next commit should get
  bool foreign = false;        // a commit id skipped one: another process wrote
  bool overrun = false;        // past detail::g_filter_catch_up_entries: given up, memory freed
  void add(const std::uint8_t* fp) {
    if (overrun) return;
    if (fingerprints.size() >= detail::g_filter_catch_up_entries) {
      overrun = true;
      std::vector<std::array<std::uint8_t, ChunkFilter::kFingerprintBytes>>().swap(fingerprints);
      return;
    }
    std::array<std::uint8_t, ChunkFilter::kFingerprintBytes> a;
    std::memcpy(a.data(), fp, a.size());
    fingerprints.push_back(a);
  }
};

// What an open index holds: the environment, its tables, the writer's lock,
// the chunk filters and the work a writer carries from one call to the next.
struct OpenIndex {
  Options options;
  std::unique_ptr<lmdb::Env> env;
  schema::Dbs dbs{};
  std::mutex write_mu;  // one writer at a time inside the process

  // The chunk filters in service (chunk_filter.hpp), or none: `filter` over
  // both chunk tables, `recent_filter` over chunks_recent alone. Replaced
  // only under write_mu (so the writer reads them without filter_mu);
  // readers take references under filter_mu and keep them alive while they
  // use them.
  std::shared_ptr<ChunkFilter> filter, recent_filter;
  mutable std::mutex filter_mu;
  struct Filters {
    std::shared_ptr<const ChunkFilter> all, recent;  // null: search
  };
  // The filters a reader of snapshot `txn_id` may trust.
  Filters filters_for(std::uint64_t txn_id) const {
    Filters f;
    {
      std::lock_guard lock(filter_mu);
      f.all = filter;
      f.recent = recent_filter;
    }
    if (f.all && (f.all->covered() < txn_id || txn_id < f.all->valid_from())) f.all = nullptr;
    if (f.recent && (f.recent->covered() < txn_id || txn_id < f.recent->valid_from())) f.recent = nullptr;
    return f;
  }
  std::shared_ptr<const ChunkFilter> filter_for(std::uint64_t txn_id) const { return filters_for(txn_id).all; }
  // Writer-only (under write_mu), like `filter`; set while a build reads.
  std::optional<FilterCatchUp> catch_up;
  // Writer: a merge left chunks_recent empty in the last commit; its filter
  // starts over from there.
  void reset_recent_filter();
  static_assert(records::kChunkKeyBytes == 1 &&
                records::kChunkKeyBytes + records::kChunkHashBytesInValue == ChunkFilter::kFingerprintBytes);
  // Writer: a chunk entry about to be committed.
  void filter_add(const records::ChunkEntryKey& e) {
    if (!filter && !catch_up) return;
    std::uint8_t fp[ChunkFilter::kFingerprintBytes];
    fp[0] = e.key[0];
    std::memcpy(fp + 1, e.value.data(), ChunkFilter::kFingerprintBytes - 1);
    if (catch_up) catch_up->add(fp);
    if (!filter) return;
    filter->add(fp);
    if (recent_filter) recent_filter->add(fp);
  }

  // Moves chunks_recent into chunks when it has outgrown its share, in one
  // sweep over the key bytes, a few a transaction, until `until` has
  // passed: a sweep rewrites nearly every page of the main table (at 268 M
  // entries, long enough to starve the daemon's watchdog), so ingest gives
  // it a slice after each shard and it goes on after the next. Entries
  // added behind the sweep wait for the next one. With force, until the
  // recent table is empty. Caller holds write_mu.
  Status merge_if_due(bool force, std::chrono::steady_clock::time_point until);
  // The key byte a sweep under way goes on from (0x100: round again).
  std::optional<unsigned> merge_from;
  // Writer: a sweep ended with entries left in chunks_recent; its filter
  // starts over from what the table holds, shedding what the sweep moved.
  void refill_recent_filter();

  // Writer: the open transaction queued an outbox entry. After the write
  // ends, outbox_written() tells the observer when it committed, so a
  // publisher wakes for the entry instead of polling for it.
  bool outbox_queued = false;
  void outbox_written(bool committed) {
    bool queued = std::exchange(outbox_queued, false);
    if (queued && committed && options.observer) options.observer->outbox_queued();
  }
};

namespace detail {

// A cursor closed on scope exit. In a write transaction it must go out of
// scope before the commit (LMDB frees write cursors with the transaction).
class Cursor {
 public:
  Cursor() = default;
  Cursor(const Cursor&) = delete;
  Cursor& operator=(const Cursor&) = delete;
  ~Cursor() {
    if (c_) mdb_cursor_close(c_);
  }
  int open(MDB_txn* txn, MDB_dbi dbi) { return mdb_cursor_open(txn, dbi, &c_); }
  MDB_cursor* get() const { return c_; }
  int move(MDB_val* k, MDB_val* v, MDB_cursor_op op) const { return mdb_cursor_get(c_, k, v, op); }

 private:
  MDB_cursor* c_ = nullptr;
};

using lmdb::TxnResult;

// One shard in the open write transaction: proceed() when done, otherwise
// what ends the transaction (an LMDB code or the index's own error).
TxnResult ingest_in_txn(OpenIndex& im, MDB_txn* txn, const shard::ShardView& view, const Hash& shard_hash,
                        const SourceInfo& source, const IngestOptions& options, IngestResult& out);
TxnResult remove_in_txn(OpenIndex& im, MDB_txn* txn, const Hash& shard_hash, ShardState new_state, std::uint64_t now,
                        RemoveResult& out);
// Keeps the chunk forms of a shard that expires now (from the xorbs its
// refs list, before they go) or arrives expired (from its file), so a query
// can say why they are gone (expired_forms.cpp); forgets them when the
// shard is live again, and drops those kept past their time.
TxnResult keep_expired_forms(OpenIndex& im, MDB_txn* txn, const Hash& shard_hash, const records::ShardRecord& rec,
                             const records::ShardRefs& refs, std::uint64_t now);
TxnResult keep_expired_forms(OpenIndex& im, MDB_txn* txn, const Hash& shard_hash, const records::ShardRecord& rec,
                             const shard::ShardView& view, std::uint64_t now);
int forget_expired_forms(OpenIndex& im, MDB_txn* txn, const Hash& shard_hash);
TxnResult drop_old_expired_forms(OpenIndex& im, MDB_txn* txn, std::uint64_t now, std::size_t& dropped);
// Records `path` as holding shard_hash (accepted) or as rejected.
int put_source(OpenIndex& im, MDB_txn* txn, const records::Source& source);

// A ShardRef from a shard record without decoding its paths (lookup path).
std::optional<ShardRef> shard_ref(const Hash& shard_hash, const MDB_val& record);

inline Error corrupt(const std::string& what) { return make_error(kRuleCorrupt, what); }

}  // namespace detail
}  // namespace dedupd::index
