// Building the chunk filter from the chunk tables and putting it in service.
#include <cstring>

#include "index/impl.hpp"

namespace dedupd::index {

using namespace records;
using detail::Cursor;

namespace {

// Room for the entries there are and for those the next ingests bring, with
// a floor so a young index is not rebuilt after every shard.
std::uint64_t capacity_for(std::uint64_t entries) {
  return std::min(std::max<std::uint64_t>(entries + entries / 4, 1u << 20), ChunkFilter::kMaxCapacity);
}

// The recent table is merged once it holds max(merge_threshold, main / 16)
// entries (merge.cpp); the last shard may overshoot that. Never more than
// the filter of both tables (a huge threshold means "never merge").
std::uint64_t recent_capacity_for(const Index::Impl& im, std::uint64_t all_entries) {
  std::uint64_t due = std::max<std::uint64_t>(im.options.merge_threshold, all_entries / 16);
  return std::min(due * 2 + (1u << 16), capacity_for(all_entries));
}

int feed(MDB_txn* txn, MDB_dbi dbi, ChunkFilter& f) {
  Cursor c;
  if (int rc = c.open(txn, dbi)) return rc;
  MDB_val k, v;
  int rc;
  std::uint8_t fp[ChunkFilter::kFingerprintBytes];
  for (rc = c.move(&k, &v, MDB_FIRST); rc == 0; rc = c.move(&k, &v, MDB_NEXT_NODUP)) {
    if (k.mv_size != kChunkKeyBytes) return MDB_CORRUPTED;
    fp[0] = *static_cast<const std::uint8_t*>(k.mv_data);
    // A page of duplicates at a time: the table keeps them packed.
    for (rc = c.move(&k, &v, MDB_GET_MULTIPLE); rc == 0; rc = c.move(&k, &v, MDB_NEXT_MULTIPLE)) {
      auto p = static_cast<const std::uint8_t*>(v.mv_data);
      for (std::size_t at = 0; at + kChunkValueBytes <= v.mv_size; at += kChunkValueBytes) {
        std::memcpy(fp + 1, p + at, ChunkFilter::kFingerprintBytes - 1);
        f.add(fp);
      }
    }
    if (rc != MDB_NOTFOUND) return rc;
  }
  return rc == MDB_NOTFOUND ? 0 : rc;
}

}  // namespace

Result<ChunkFilterInfo> Index::build_chunk_filter() {
  // Under the writer lock: no entry can be committed between the snapshot
  // read here and the filter going into service. Readers are not held up.
  std::lock_guard lock(impl_->write_mu);
  auto txn = impl_->env->begin_read();
  if (!txn) return txn.error();
  MDB_txn* t = txn->get();
  MDB_stat recent, main;
  int rc;
  if ((rc = mdb_stat(t, impl_->dbs.chunks_recent, &recent)) || (rc = mdb_stat(t, impl_->dbs.chunks, &main)))
    return lmdb::error_of(rc, "counting chunk entries");
  std::uint64_t all = recent.ms_entries + main.ms_entries;
  auto f = std::make_shared<ChunkFilter>(capacity_for(all));
  auto r = std::make_shared<ChunkFilter>(recent_capacity_for(*impl_, all));
  f->expect_after(mdb_txn_id(t));
  r->expect_after(mdb_txn_id(t));
  if ((rc = feed(t, impl_->dbs.chunks_recent, *f)) || (rc = feed(t, impl_->dbs.chunks_recent, *r)) ||
      (rc = feed(t, impl_->dbs.chunks, *f)))
    return lmdb::error_of(rc, "reading chunk entries");
  f->publish();
  r->publish();
  {
    std::lock_guard fl(impl_->filter_mu);
    impl_->filter = f;
    impl_->recent_filter = r;
  }
  return ChunkFilterInfo{true, f->bytes(), f->capacity(), f->added()};
}

void Index::Impl::reset_recent_filter() {
  if (!filter) return;
  MDB_envinfo info;
  if (mdb_env_info(env->raw(), &info) != 0) return;
  auto r = std::make_shared<ChunkFilter>(recent_capacity_for(*this, filter->added()));
  // Complete at once: the table is empty as of this commit. A reader of an
  // older snapshot does not use it (valid_from), so it still searches the
  // entries that merge moved where that snapshot has them.
  r->expect_after(info.me_last_txnid);
  r->publish();
  std::lock_guard lock(filter_mu);
  recent_filter = r;
}

namespace {

// The filter, if a reader starting now would trust it.
std::shared_ptr<const ChunkFilter> trusted_now(const Index::Impl& im) {
  MDB_envinfo info;
  if (mdb_env_info(im.env->raw(), &info) != 0) return nullptr;
  return im.filter_for(std::max<std::uint64_t>(info.me_last_txnid, 1));
}

}  // namespace

ChunkFilterInfo Index::chunk_filter_info() const {
  auto f = trusted_now(*impl_);
  if (!f) return {};
  return ChunkFilterInfo{true, f->bytes(), f->capacity(), f->added()};
}

bool Index::chunk_filter_due() const {
  auto f = trusted_now(*impl_);
  return !f || f->outgrown();
}

}  // namespace dedupd::index
