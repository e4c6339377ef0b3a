#include "index/upgrade.hpp"

#include <algorithm>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "index/duplicates.hpp"
#include "index/observer.hpp"
#include "index/tuning.hpp"

namespace dedupd::index {

std::uint64_t detail::g_upgrade_step_entries = std::uint64_t(1) << 19;
std::function<void()> detail::g_after_upgrade_step;

namespace upgrade {

namespace {

using namespace records;
using detail::ChunkKey;
using detail::Cursor;

// Rewrites the key's older duplicates (`count` of them, `width` bytes each)
// in the current width. Dropping hash bytes can change their order (two
// entries with the same first three bytes sort on the fourth before, on the
// xorb id after), so they are sorted again, then written afresh in order,
// pages full.
int convert_key(const Cursor& c, const ChunkKey& key, std::uint64_t count, std::size_t width,
                std::vector<std::uint8_t>& old, std::vector<PackedChunkValue>& packed, std::vector<std::uint8_t>& out) {
  old.clear();
  if (int rc = detail::copy_duplicates(c, key, count, old)) return rc;
  if (old.size() != count * width) return MDB_CORRUPTED;
  packed.resize(count);
  for (std::size_t i = 0; i < count; ++i) packed[i] = PackedChunkValue::load(&old[i * width], width);
  std::sort(packed.begin(), packed.end());
  out.resize(count * kChunkValueBytes);
  for (std::size_t i = 0; i < count; ++i) packed[i].store(&out[i * kChunkValueBytes]);
  MDB_val k = val(key.data(), key.size()), v;
  int rc;
  if ((rc = c.move(&k, &v, MDB_SET)) || (rc = mdb_cursor_del(c.get(), MDB_NODUPDATA))) return rc;
  return detail::put_duplicates(c, key, out, kChunkValueBytes, MDB_APPENDDUP);
}

// The first key byte at or after `from` whose duplicates are of an older
// width, how many it has and their width; 0x100 when none is left.
int next_old_key(const Cursor& c, unsigned from, unsigned& key, std::uint64_t& count, std::size_t& width) {
  for (key = from; key <= 0xff; ++key) {
    std::uint8_t b = std::uint8_t(key);
    MDB_val k = val(&b, 1), v;
    int rc = c.move(&k, &v, MDB_SET_KEY);
    if (rc == MDB_NOTFOUND) continue;
    if (rc) return rc;
    if (v.mv_size == kChunkValueBytes) continue;
    if (!chunk_width_known(v.mv_size)) return MDB_CORRUPTED;
    width = v.mv_size;
    return detail::key_entries(c, {b}, count);
  }
  return 0;
}

}  // namespace

Status chunk_entries_to_current(lmdb::Env& env, const schema::Dbs& dbs) {
  std::vector<std::uint8_t> old, out;
  std::vector<PackedChunkValue> packed;
  std::uint64_t total = 0, done = 0;
  {
    auto txn = env.begin_read();
    if (!txn) return txn.error();
    for (MDB_dbi table : {dbs.chunks, dbs.chunks_recent}) {
      MDB_stat s;
      if (int rc = mdb_stat(txn->get(), table, &s)) return lmdb::error_of(rc, "counting the chunk entries to upgrade");
      total += s.ms_entries;
    }
  }
  for (MDB_dbi table : {dbs.chunks, dbs.chunks_recent}) {
    for (unsigned from = 0; from <= 0xff;) {
      unsigned next = from;
      std::uint64_t taken = 0;
      auto status = env.write(
          [&](MDB_txn* txn) -> lmdb::TxnResult {
            next = from;
            Cursor c;
            if (int rc = c.open(txn, table)) return rc;
            taken = 0;
            for (;;) {
              unsigned key = 0;
              std::uint64_t count = 0;
              std::size_t width = 0;
              if (int rc = next_old_key(c, next, key, count, width)) return rc;
              if (key > 0xff || (taken > 0 && taken + count > detail::g_upgrade_step_entries)) {
                next = key;
                break;
              }
              if (int rc = convert_key(c, {std::uint8_t(key)}, count, width, old, packed, out)) return rc;
              taken += count;
              next = key + 1;
            }
            return taken > 0 ? lmdb::TxnResult::commit() : lmdb::TxnResult::rollback();
          },
          "upgrading the chunk entries to schema 6");
      if (!status) return status;
      from = next;
      done += taken;
      if (taken > 0 && env.options().observer) env.options().observer->upgrade_progress(done, total);
      if (detail::g_after_upgrade_step) detail::g_after_upgrade_step();
    }
  }
  return Ok{};
}

Status shard_scopes_from_paths(lmdb::Env& env, const schema::Dbs& dbs,
                               const std::function<std::string(const std::string&)>& scope_of_path) {
  if (!scope_of_path) return Ok{};
  // Shard records are few (one per shard file) and small: a few thousand a
  // transaction keep its dirty pages bounded whatever the index's size.
  constexpr std::size_t kRecordsPerStep = 4096;
  std::optional<Hash> after;
  for (bool more = true; more;) {
    auto status = env.write(
        [&](MDB_txn* txn) -> lmdb::TxnResult {
          Cursor c;
          if (int rc = c.open(txn, dbs.shards)) return rc;
          MDB_val k, v;
          int rc;
          if (after) {
            k = val(*after);
            rc = c.move(&k, &v, MDB_SET_RANGE);
            if (rc == 0 && k.mv_size == 32 && Hash::from_bytes(span_of(k)) == *after) rc = c.move(&k, &v, MDB_NEXT);
          } else {
            rc = c.move(&k, &v, MDB_FIRST);
          }
          std::size_t seen = 0;
          bool changed = false;
          for (; rc == 0 && seen < kRecordsPerStep; rc = c.move(&k, &v, MDB_NEXT), ++seen) {
            if (k.mv_size != 32) return detail::corrupt("shards: bad key size");
            Hash h = Hash::from_bytes(span_of(k));
            after = h;
            auto rec = decode_shard(v);
            if (!rec) return detail::corrupt("shard record " + h.to_string() + " does not decode");
            if (!rec->cas.empty()) continue;
            for (const std::string& path : rec->paths) {
              rec->cas = scope_of_path(path);
              if (!rec->cas.empty()) break;
            }
            if (rec->cas.empty()) continue;
            Bytes b = encode(*rec);
            MDB_val nv = val(b);
            // In place at the cursor: the key stays, only the value grows.
            MDB_val kk = val(h);
            if ((rc = mdb_cursor_put(c.get(), &kk, &nv, MDB_CURRENT))) return rc;
            changed = true;
          }
          if (rc != 0 && rc != MDB_NOTFOUND) return rc;
          more = rc == 0;
          return changed ? lmdb::TxnResult::commit() : lmdb::TxnResult::rollback();
        },
        "giving the shards of the index their CAS (schema 7)");
    if (!status) return status;
  }
  return Ok{};
}

}  // namespace upgrade
}  // namespace dedupd::index
