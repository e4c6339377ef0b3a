// Moving chunk entries from chunks_recent into chunks (see schema.hpp for
// why two tables). A step moves whole key bytes, so each entry is in exactly
// one table at every commit, and lookups probe both.
#include <cstring>

#include "index/impl.hpp"

namespace dedupd::index {

using namespace records;
using detail::Cursor;

namespace {

constexpr unsigned kKeysPerStep = 16;  // 1/16 of the big table per transaction

int entries(MDB_txn* txn, MDB_dbi dbi, std::uint64_t& n) {
  MDB_stat st;
  int rc = mdb_stat(txn, dbi, &st);
  n = st.ms_entries;
  return rc;
}

// Moves up to kKeysPerStep key bytes; `left` gets what remains in recent.
int merge_step(const Index::Impl& im, MDB_txn* txn, std::uint64_t& left) {
  Cursor recent, main;
  int rc;
  if ((rc = recent.open(txn, im.dbs.chunks_recent)) || (rc = main.open(txn, im.dbs.chunks))) return rc;
  std::vector<std::uint8_t> batch;
  for (unsigned n = 0; n < kKeysPerStep; ++n) {
    MDB_val k, v;
    rc = recent.move(&k, &v, MDB_FIRST);
    if (rc == MDB_NOTFOUND) break;
    if (rc) return rc;
    std::array<std::uint8_t, kChunkKeyBytes> key;
    if (k.mv_size != key.size()) return MDB_CORRUPTED;
    std::memcpy(key.data(), k.mv_data, key.size());
    // Copy out a page of duplicates at a time: writing into `main` may move
    // the pages `v` points into.
    for (rc = recent.move(&k, &v, MDB_GET_MULTIPLE); rc == 0; rc = recent.move(&k, &v, MDB_NEXT_MULTIPLE)) {
      batch.assign(static_cast<const std::uint8_t*>(v.mv_data), static_cast<const std::uint8_t*>(v.mv_data) + v.mv_size);
      for (std::size_t at = 0; at + kChunkValueBytes <= batch.size(); at += kChunkValueBytes) {
        MDB_val mk = val(key.data(), key.size()), mv = val(batch.data() + at, kChunkValueBytes);
        if (int r2 = mdb_cursor_put(main.get(), &mk, &mv, 0)) return r2;
      }
    }
    if (rc != MDB_NOTFOUND) return rc;
    MDB_val dk = val(key.data(), key.size()), dv;
    if ((rc = recent.move(&dk, &dv, MDB_SET))) return rc;
    if ((rc = mdb_cursor_del(recent.get(), MDB_NODUPDATA))) return rc;
  }
  return entries(txn, im.dbs.chunks_recent, left);
}

}  // namespace

Status Index::Impl::merge_if_due(bool force) {
  bool merging = force;
  for (;;) {
    std::uint64_t left = 0;
    bool stepped = false;
    auto status = env->write(
        [&](MDB_txn* txn) -> int {
          stepped = false;
          std::uint64_t recent, big;
          int rc;
          if ((rc = entries(txn, dbs.chunks_recent, recent)) || (rc = entries(txn, dbs.chunks, big))) return rc;
          if (recent == 0) return lmdb::kAbortTxn;
          if (!merging && recent <= std::max<std::uint64_t>(options.merge_threshold, big / 16)) return lmdb::kAbortTxn;
          stepped = true;
          return merge_step(*this, txn, left);
        },
        "merging recent chunk entries");
    if (!status) return status;
    if (!stepped || left == 0) return Ok{};
    merging = true;  // once started, empty the recent table
  }
}

Status Index::merge_recent() {
  std::lock_guard lock(impl_->write_mu);
  return impl_->merge_if_due(true);
}

}  // namespace dedupd::index
