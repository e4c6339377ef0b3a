// The raw-chunk walk (export.hpp): a merge of the two chunk tables in key
// order, grouped by the 5 hash bytes they hold, resolved through the xorb
// records to full hashes and locations.
#include "index/export.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "index/impl.hpp"

namespace dedupd::index {

using namespace records;
using detail::Cursor;

namespace {

// Key byte + the fixed 10-byte duplicate: the order both tables sort in.
constexpr std::size_t kEntryBytes = kChunkKeyBytes + kChunkValueBytes;
constexpr std::size_t kPrefixBytes = kChunkKeyBytes + kChunkHashBytesInValue;

// One chunk table, entry by entry (MDB_NEXT visits every duplicate).
class TableStream {
 public:
  int open(MDB_txn* txn, MDB_dbi dbi) {
    if (int rc = cursor_.open(txn, dbi)) return rc;
    return step(MDB_FIRST);
  }
  bool done() const { return done_; }
  const std::array<std::uint8_t, kEntryBytes>& entry() const { return entry_; }
  int next() { return step(MDB_NEXT); }

 private:
  int step(MDB_cursor_op op) {
    MDB_val k, v;
    for (;;) {
      int rc = cursor_.move(&k, &v, op);
      if (rc == MDB_NOTFOUND) {
        done_ = true;
        return 0;
      }
      if (rc) return rc;
      op = MDB_NEXT;
      // A malformed entry is the checker's business; lookups skip it too.
      if (k.mv_size != kChunkKeyBytes || !chunk_width_known(v.mv_size)) continue;
      std::memcpy(entry_.data(), k.mv_data, kChunkKeyBytes);
      // An older entry (read as it is) in the current form: the entries
      // of one prefix stay together, which is all the walk's groups need.
      PackedChunkValue::load(static_cast<const std::uint8_t*>(v.mv_data), v.mv_size)
          .store(entry_.data() + kChunkKeyBytes);
      return 0;
    }
  }

  Cursor cursor_;
  std::array<std::uint8_t, kEntryBytes> entry_{};
  bool done_ = false;
};

struct Found {
  Hash hash;
  RawLocation location;
};

bool by_hash_then_location(const Found& a, const Found& b) {
  if (int c = std::memcmp(a.hash.data(), b.hash.data(), 32)) return c < 0;
  const RawLocation &x = a.location, &y = b.location;
  if (int c = std::memcmp(x.xorb.data(), y.xorb.data(), 32)) return c < 0;
  return std::tie(x.chunk_index, x.byte_start, x.byte_end, x.unpacked_bytes, x.flags) <
         std::tie(y.chunk_index, y.byte_start, y.byte_end, y.unpacked_bytes, y.flags);
}

bool same(const Found& a, const Found& b) { return a.hash == b.hash && a.location == b.location; }

}  // namespace

Result<WalkCounts> RawChunkWalker::walk(const Index& index, const RawChunkVisitor& visit) {
  const OpenIndex& im = *index.impl_;
  auto txn = im.env->begin_read();
  if (!txn) return txn.error();
  MDB_txn* t = txn->get();

  TableStream main, recent;
  if (int rc = main.open(t, im.dbs.chunks)) return lmdb::error_of(rc, "export: reading the chunk table");
  if (int rc = recent.open(t, im.dbs.chunks_recent))
    return lmdb::error_of(rc, "export: reading the recent chunk table");

  // Xorb record views stay valid for the transaction; the cache is bounded
  // so a huge index of tiny xorbs does not make it grow with the index.
  constexpr std::size_t kCacheLimit = 1 << 16;
  std::unordered_map<XorbId, std::optional<XorbRecordView>> cache;
  auto xorb = [&](XorbId id, const XorbRecordView*& out) -> int {
    out = nullptr;
    auto it = cache.find(id);
    if (it == cache.end()) {
      if (cache.size() >= kCacheLimit) cache.clear();
      IdKey ik(id);
      MDB_val k = ik.mdb(), v;
      int rc = mdb_get(t, im.dbs.xorbs, &k, &v);
      if (rc && rc != MDB_NOTFOUND) return rc;
      it = cache.emplace(id, rc == 0 ? XorbRecordView::decode(v) : std::nullopt).first;
    }
    if (it->second) out = &*it->second;
    return 0;
  };

  WalkCounts counts;
  std::vector<Found> group;  // entries sharing one 6-byte prefix
  std::vector<RawLocation> locations;
  std::array<std::uint8_t, kPrefixBytes> prefix{};

  // Emits the group: one visitor call per distinct full hash.
  auto flush = [&]() -> Status {
    std::sort(group.begin(), group.end(), by_hash_then_location);
    group.erase(std::unique(group.begin(), group.end(), same), group.end());
    for (std::size_t i = 0; i < group.size();) {
      std::size_t j = i;
      locations.clear();
      for (; j < group.size() && group[j].hash == group[i].hash; ++j) locations.push_back(group[j].location);
      ++counts.chunks;
      counts.locations += locations.size();
      if (auto s = visit(group[i].hash, locations); !s) return s.error();
      i = j;
    }
    group.clear();
    return Ok{};
  };

  while (!main.done() || !recent.done()) {
    TableStream* s;
    if (main.done()) s = &recent;
    else if (recent.done()) s = &main;
    else s = std::memcmp(main.entry().data(), recent.entry().data(), kEntryBytes) <= 0 ? &main : &recent;
    const auto& e = s->entry();
    if (!group.empty() && std::memcmp(prefix.data(), e.data(), kPrefixBytes) != 0) {
      if (auto st = flush(); !st) return st.error();
    }
    std::memcpy(prefix.data(), e.data(), kPrefixBytes);

    const std::uint8_t* dup = e.data() + kChunkKeyBytes;
    const std::uint32_t chunk = chunk_value_index(dup);
    const XorbRecordView* x = nullptr;
    if (int rc = xorb(chunk_value_xorb(dup), x)) return lmdb::error_of(rc, "export: reading a xorb record");
    if (x && x->keyed()) {
      ++counts.keyed_entries;
    } else if (x && chunk < x->num_chunks() && std::memcmp(x->chunk_hash_bytes(chunk), e.data(), kPrefixBytes) == 0) {
      Found f;
      f.hash = Hash::from_bytes({x->chunk_hash_bytes(chunk), 32});
      f.location.xorb = x->xorb_hash();
      f.location.chunk_index = chunk;
      x->chunk_range(chunk, f.location.byte_start, f.location.unpacked_bytes, f.location.flags);
      f.location.byte_end = f.location.byte_start + f.location.unpacked_bytes;
      group.push_back(f);
    }
    if (int rc = s->next()) return lmdb::error_of(rc, "export: reading the chunk tables");
  }
  if (auto st = flush(); !st) return st.error();
  return counts;
}

}  // namespace dedupd::index
