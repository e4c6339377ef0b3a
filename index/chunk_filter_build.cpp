// Building the chunk filter from the chunk tables and putting it in service.
#include <array>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>
#include <utility>

#include "index/impl.hpp"
#include "index/index.hpp"

namespace dedupd::index {

std::size_t detail::g_filter_catch_up_entries = std::size_t(4) << 20;

using namespace records;
using detail::Cursor;

namespace {

ChunkFilterSizes filter_sizes(const OpenIndex& im, std::uint64_t entries) {
  return chunk_filter_sizes(entries, im.options.merge_threshold, im.options.filter_memory,
                            im.options.filter_floor_entries);
}

// A new recent-table filter beside `all` (in service): what filter_sizes
// gives for the entries `all` holds, within the room `all` leaves.
std::shared_ptr<ChunkFilter> new_recent_filter(const OpenIndex& im, const ChunkFilter& all) {
  ChunkFilterSizes s = filter_sizes(im, all.added());
  const std::uint64_t max_bytes = im.options.filter_memory;
  const std::uint64_t left = ChunkFilter::capacity_within(max_bytes > all.bytes() ? max_bytes - all.bytes() : 0);
  if (s.recent > left) s.recent = left, s.at_bound = true;
  return std::make_shared<ChunkFilter>(s.recent, s.at_bound || all.at_bound());
}

ChunkFilterInfo info_of(const OpenIndex& im, const ChunkFilter* all, const ChunkFilter* recent, bool in_service) {
  ChunkFilterInfo i;
  i.in_service = in_service;
  i.max_bytes = im.options.filter_memory;
  if (!all) return i;
  i.bytes = all->bytes() + (recent ? recent->bytes() : 0);
  i.capacity = all->capacity();
  i.added = all->added();
  i.at_bound = all->at_bound();
  i.false_positive_rate = all->false_positive_rate();
  return i;
}

// Where a read of a chunk table stands: before its first entry, at an entry
// (key byte and value), or past its end.
struct Position {
  int key = -1;  // -1: not started
  std::array<std::uint8_t, kChunkValueBytesV4> value{};
  std::size_t width = kChunkValueBytes;  // of `value`, as the key held it
  bool done = false;
};

// Adds the entries of `dbi` after `at` to each of `to`, about `budget` of
// them (whole pages), and moves `at` past them.
int feed_some(MDB_txn* txn, MDB_dbi dbi, std::initializer_list<ChunkFilter*> to, Position& at, std::uint64_t budget) {
  Cursor c;
  if (int rc = c.open(txn, dbi)) return rc;
  MDB_val k, v;
  int rc;
  std::uint8_t key = 0;
  // Resuming: MDB_GET_MULTIPLE gives the page `at` is on from its start,
  // so what is not after `at` there is skipped.
  bool resumed = false;
  if (at.key < 0) {
    rc = c.move(&k, &v, MDB_FIRST);
  } else {
    key = std::uint8_t(at.key);
    k = val(&key, 1), v = val(at.value.data(), at.width);
    rc = c.move(&k, &v, MDB_GET_BOTH_RANGE);
    resumed = rc == 0;
    if (rc == MDB_NOTFOUND && at.key < 0xff) {  // nothing left under that key byte: the next one
      key = std::uint8_t(at.key + 1);
      k = val(&key, 1);
      rc = c.move(&k, &v, MDB_SET_RANGE);
    }
  }
  std::uint64_t fed = 0;
  std::uint8_t fp[ChunkFilter::kFingerprintBytes];
  for (; rc == 0; rc = c.move(&k, &v, MDB_NEXT_NODUP)) {
    if (k.mv_size != kChunkKeyBytes) return MDB_CORRUPTED;
    fp[0] = *static_cast<const std::uint8_t*>(k.mv_data);
    // The key's width, from the duplicate the cursor is on: 10 bytes, or 11
    // or 12 in an index of an older schema read as it is (records.hpp).
    const std::size_t w = v.mv_size;
    if (!chunk_width_known(w)) return MDB_CORRUPTED;
    // A page of duplicates at a time: the table keeps them packed.
    for (rc = c.move(&k, &v, MDB_GET_MULTIPLE); rc == 0; rc = c.move(&k, &v, MDB_NEXT_MULTIPLE)) {
      auto p = static_cast<const std::uint8_t*>(v.mv_data);
      std::size_t n = v.mv_size / w, i = 0;
      if (std::exchange(resumed, false) && at.width == w)
        while (i < n && std::memcmp(p + i * w, at.value.data(), w) <= 0) ++i;
      for (std::size_t j = i; j < n; ++j) {
        std::memcpy(fp + 1, p + j * w, ChunkFilter::kFingerprintBytes - 1);
        for (ChunkFilter* f : to) f->add(fp);
      }
      fed += n - i;
      if (fed >= budget && n > i) {
        at.key = fp[0];
        at.width = w;
        std::memcpy(at.value.data(), p + (n - 1) * w, w);
        return 0;
      }
    }
    if (rc != MDB_NOTFOUND) return rc;
  }
  if (rc != MDB_NOTFOUND) return rc;
  at.done = true;
  return 0;
}

}  // namespace

Result<ChunkFilterInfo> Index::build_chunk_filter(const std::function<bool(unsigned)>& go_on) {
  // The tables are read without the writer lock: on a large index that takes
  // a minute (268 M entries: 62 s), and the daemon's work loop must go on
  // ingesting, and pinging the watchdog, meanwhile. What this process
  // commits from the start of the build on is logged by the writer
  // (OpenIndex::catch_up) and added under the lock at the end, before the filter
  // goes into service.
  std::uint64_t all = 0;
  {
    std::lock_guard lock(impl_->write_mu);
    if (impl_->catch_up) return make_error(kRuleArgument, "a chunk filter build is already under way");
    auto txn = impl_->env->begin_read();
    if (!txn) return txn.error();
    MDB_stat recent, main;
    int rc = mdb_stat(txn->get(), impl_->dbs.chunks_recent, &recent);
    if (rc == 0) rc = mdb_stat(txn->get(), impl_->dbs.chunks, &main);
    if (rc) return lmdb::error_of(rc, "counting chunk entries");
    all = recent.ms_entries + main.ms_entries;
    impl_->catch_up.emplace();
    impl_->catch_up->next_txn = mdb_txn_id(txn->get()) + 1;
  }
  // However the build ends, the writer stops logging.
  struct StopLogging {
    OpenIndex& im;
    ~StopLogging() {
      std::lock_guard lock(im.write_mu);
      im.catch_up.reset();
    }
  } stop_logging{*impl_};

  const ChunkFilterSizes sizes = filter_sizes(*impl_, all);
  auto f = std::make_shared<ChunkFilter>(sizes.all, sizes.at_bound);
  auto r = std::make_shared<ChunkFilter>(sizes.recent, sizes.at_bound);
  // A snapshot at a time, a bounded read in each: a read transaction holds
  // up the map's growth (index/env.hpp), and ingest grows the map while the
  // build reads. An entry that is there when the build ends was there all
  // along, and is read where it was then, or was committed since and is in
  // the log: one a merge moves out of the recent table before it is read
  // there is read in the main table, which comes after.
  Position recent_at, main_at;
  const std::uint64_t per_snapshot = std::max<std::uint64_t>(impl_->options.filter_build_entries_per_snapshot, 1);
  for (unsigned n = 0; !main_at.done; ++n) {
    if (go_on && !go_on(n)) return make_error(kRuleArgument, "the chunk filter build was given up");
    auto txn = impl_->env->begin_read();
    if (!txn) return txn.error();
    int rc = !recent_at.done
                 ? feed_some(txn->get(), impl_->dbs.chunks_recent, {f.get(), r.get()}, recent_at, per_snapshot)
                 : feed_some(txn->get(), impl_->dbs.chunks, {f.get()}, main_at, per_snapshot);
    if (rc) return lmdb::error_of(rc, "reading chunk entries");
  }

  std::lock_guard lock(impl_->write_mu);
  const auto& log = *impl_->catch_up;
  MDB_envinfo info;
  if (int rc = mdb_env_info(impl_->env->raw(), &info)) return lmdb::error_of(rc, "reading the last transaction id");
  // Entries another process committed meanwhile are in no log. Lookups go
  // on searching every form; the next request builds again.
  if (log.foreign || info.me_last_txnid != log.next_txn - 1)
    return make_error(kRuleOtherWriter, "another process wrote to the index while its chunk filter was being built");
  if (log.overrun)
    return make_error(kRuleLimit, "more than " + std::to_string(detail::g_filter_catch_up_entries) +
                                      " chunk entries were written while the chunk filter was being built; "
                                      "it is built again when ingest is idle");
  for (const auto& fp : log.fingerprints) {
    f->add(fp.data());
    r->add(fp.data());
  }
  // Both speak for snapshots from now on only: a reader of an older one may
  // see an entry removed while the build read.
  f->expect_after(info.me_last_txnid);
  r->expect_after(info.me_last_txnid);
  f->publish();
  r->publish();
  {
    std::lock_guard fl(impl_->filter_mu);
    impl_->filter = f;
    impl_->recent_filter = r;
  }
  return info_of(*impl_, f.get(), r.get(), true);
}

void OpenIndex::reset_recent_filter() {
  if (!filter) return;
  MDB_envinfo info;
  if (mdb_env_info(env->raw(), &info) != 0) return;
  auto r = new_recent_filter(*this, *filter);
  // Complete at once: the table is empty as of this commit. A reader of an
  // older snapshot does not use it (valid_from), so it still searches the
  // entries that merge moved where that snapshot has them.
  r->expect_after(info.me_last_txnid);
  r->publish();
  std::lock_guard lock(filter_mu);
  recent_filter = r;
}

void OpenIndex::refill_recent_filter() {
  if (!filter) return;
  MDB_envinfo info;
  if (mdb_env_info(env->raw(), &info) != 0) return;
  // Under the writer lock: the snapshot is the last commit. What a sweep
  // leaves is what ingest added while it ran, a small part of the table's
  // due size. On any failure the old filter stays: it holds more than the
  // table, which costs searches, not answers.
  auto txn = env->begin_read();
  if (!txn) return;
  auto r = new_recent_filter(*this, *filter);
  Position at;
  while (!at.done)
    if (feed_some(txn->get(), dbs.chunks_recent, {r.get()}, at, std::numeric_limits<std::uint64_t>::max())) return;
  r->expect_after(info.me_last_txnid);
  r->publish();
  std::lock_guard lock(filter_mu);
  recent_filter = r;
}

namespace {

// The filter, if a reader starting now would trust it.
std::shared_ptr<const ChunkFilter> trusted_now(const OpenIndex& im) {
  MDB_envinfo info;
  if (mdb_env_info(im.env->raw(), &info) != 0) return nullptr;
  return im.filter_for(std::max<std::uint64_t>(info.me_last_txnid, 1));
}

}  // namespace

ChunkFilterInfo Index::chunk_filter_info() const {
  std::shared_ptr<const ChunkFilter> f, r;
  {
    std::lock_guard lock(impl_->filter_mu);
    f = impl_->filter;
    r = impl_->recent_filter;
  }
  // The memory is held whether or not a reader may trust the filters now.
  return info_of(*impl_, f.get(), r.get(), trusted_now(*impl_) != nullptr);
}

bool Index::chunk_filter_due() const {
  auto f = trusted_now(*impl_);
  return !f || f->outgrown();
}

}  // namespace dedupd::index
