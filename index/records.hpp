// On-disk layouts of the index records (schema version in tables.hpp; any
// change here that old code cannot read bumps it). Keys that LMDB orders
// (ids, expiry instants) are big-endian so memcmp order is numeric order;
// everything inside values is little-endian like the shard format.
//
// Space: the chunk table is the only per-chunk structure besides the xorb
// record (which rebuilds the 48-byte CAS entries as stored from about 35
// bytes a chunk, in overflow pages; see below). It is an MDB_DUPSORT|MDB_DUPFIXED table whose key is the first
// byte of the stored chunk hash and whose fixed 10-byte duplicates are
// (next 3 hash bytes, xorb id, chunk index): LMDB packs fixed duplicates
// without per-item headers, so an entry costs 10 bytes / page fill. The 32
// bits of hash only pick candidates: the full 32 bytes in the xorb record
// decide a match. At 10 M entries a probe meets a stranger's 32 bits about
// once in 430, and costs then one more xorb record read; the in-memory
// filter (chunk_filter.hpp) keeps most absent forms from probing at all.
// Schema 5 kept 4 hash bytes (11-byte duplicates), schema 4 and earlier 5
// (12 bytes): upgrade.cpp rewrites them, and readers take any of the widths
// from the size LMDB gives them (a key's duplicates all have one width).
#pragma once

#include <lmdb.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "index/types.hpp"
#include "shard/reader.hpp"

namespace dedupd::index::records {

using Bytes = std::vector<std::uint8_t>;

inline void store_be32(std::uint8_t* p, std::uint32_t v) {
  p[0] = std::uint8_t(v >> 24), p[1] = std::uint8_t(v >> 16), p[2] = std::uint8_t(v >> 8), p[3] = std::uint8_t(v);
}
inline std::uint32_t load_be32(const std::uint8_t* p) {
  return std::uint32_t(p[0]) << 24 | std::uint32_t(p[1]) << 16 | std::uint32_t(p[2]) << 8 | p[3];
}
inline void store_be64(std::uint8_t* p, std::uint64_t v) {
  store_be32(p, std::uint32_t(v >> 32));
  store_be32(p + 4, std::uint32_t(v));
}
inline std::uint64_t load_be64(const std::uint8_t* p) { return std::uint64_t(load_be32(p)) << 32 | load_be32(p + 4); }

inline MDB_val val(const void* p, std::size_t n) { return MDB_val{n, const_cast<void*>(p)}; }
inline MDB_val val(const Hash& h) { return val(h.data(), 32); }
inline MDB_val val(const Bytes& b) { return val(b.data(), b.size()); }
inline std::span<const std::uint8_t> span_of(const MDB_val& v) {
  return {static_cast<const std::uint8_t*>(v.mv_data), v.mv_size};
}

// ---- chunk table ----------------------------------------------------------
inline constexpr std::size_t kChunkKeyBytes = 1;
inline constexpr std::size_t kChunkHashBytesInValue = 3;
inline constexpr std::size_t kChunkValueBytes = kChunkHashBytesInValue + 4 + 3;
// Older layouts: more hash bytes in front, the same tail (upgrade.cpp).
inline constexpr std::size_t kChunkValueBytesV5 = kChunkValueBytes + 1;  // schema 5
inline constexpr std::size_t kChunkValueBytesV4 = kChunkValueBytes + 2;  // schema 4 and earlier
inline constexpr std::size_t kChunkValueBytesWidest = kChunkValueBytesV4;
inline bool chunk_width_known(std::size_t width) {
  return width >= kChunkValueBytes && width <= kChunkValueBytesWidest;
}
inline constexpr std::uint32_t kMaxChunksPerXorb = 1u << 24;  // chunk index is 24 bits
inline constexpr std::uint32_t kMaxXorbId = UINT32_MAX;

struct ChunkEntryKey {
  std::array<std::uint8_t, kChunkKeyBytes> key;
  std::array<std::uint8_t, kChunkValueBytes> value;

  MDB_val mdb_key() const { return val(key.data(), key.size()); }
  MDB_val mdb_value() const { return val(value.data(), value.size()); }
  auto operator<=>(const ChunkEntryKey&) const = default;
};

inline ChunkEntryKey chunk_entry(const std::uint8_t* stored_hash, std::uint32_t xorb_id, std::uint32_t index) {
  ChunkEntryKey e;
  std::memcpy(e.key.data(), stored_hash, kChunkKeyBytes);
  std::memcpy(e.value.data(), stored_hash + kChunkKeyBytes, kChunkHashBytesInValue);
  store_be32(e.value.data() + kChunkHashBytesInValue, xorb_id);
  std::uint8_t* p = e.value.data() + kChunkHashBytesInValue + 4;
  p[0] = std::uint8_t(index >> 16), p[1] = std::uint8_t(index >> 8), p[2] = std::uint8_t(index);
  return e;
}
// The smallest duplicate for a stored hash: the MDB_GET_BOTH_RANGE probe.
inline std::array<std::uint8_t, kChunkValueBytes> chunk_probe(const std::uint8_t* stored_hash) {
  std::array<std::uint8_t, kChunkValueBytes> v{};
  std::memcpy(v.data(), stored_hash + kChunkKeyBytes, kChunkHashBytesInValue);
  return v;
}
// A duplicate of any known width (chunk_width_known) starts with the same
// hash bytes and ends with the xorb id and chunk index.
inline bool chunk_value_matches(const std::uint8_t* value, const std::uint8_t* stored_hash) {
  return std::memcmp(value, stored_hash + kChunkKeyBytes, kChunkHashBytesInValue) == 0;
}
inline std::uint32_t chunk_value_xorb(const std::uint8_t* value, std::size_t width = kChunkValueBytes) {
  return load_be32(value + width - 7);
}
inline std::uint32_t chunk_value_index(const std::uint8_t* value, std::size_t width = kChunkValueBytes) {
  const std::uint8_t* p = value + width - 3;
  return std::uint32_t(p[0]) << 16 | std::uint32_t(p[1]) << 8 | p[2];
}

// A 10-byte duplicate as two integers whose order is LMDB's memcmp order:
// sorting these is several times cheaper than sorting byte arrays.
struct PackedChunkValue {
  std::uint64_t hi = 0;  // value bytes 0..6: hash bytes 1..3, xorb id
  std::uint32_t lo = 0;  // value bytes 7..9: chunk index
  bool operator<(const PackedChunkValue& o) const { return hi < o.hi || (hi == o.hi && lo < o.lo); }
  static PackedChunkValue of(const std::uint8_t* stored_hash, std::uint32_t xorb_id, std::uint32_t index) {
    return {hash_bits(stored_hash + kChunkKeyBytes) << 32 | xorb_id, index};
  }
  // From a stored duplicate of any known width: its first hash bytes (an
  // older width's extra ones dropped), xorb id and chunk index.
  static PackedChunkValue load(const std::uint8_t* value, std::size_t width) {
    return {hash_bits(value) << 32 | chunk_value_xorb(value, width), chunk_value_index(value, width)};
  }
  void store(std::uint8_t* value) const {
    value[0] = std::uint8_t(hi >> 48), value[1] = std::uint8_t(hi >> 40), value[2] = std::uint8_t(hi >> 32);
    store_be32(value + 3, std::uint32_t(hi));
    value[7] = std::uint8_t(lo >> 16), value[8] = std::uint8_t(lo >> 8), value[9] = std::uint8_t(lo);
  }

 private:
  static std::uint64_t hash_bits(const std::uint8_t* p) {
    return std::uint64_t(p[0]) << 16 | std::uint64_t(p[1]) << 8 | p[2];
  }
};
static_assert(kChunkKeyBytes == 1 && kChunkHashBytesInValue == 3 && kChunkValueBytes == 10);

// ---- xorb ids -------------------------------------------------------------
using XorbId = std::uint32_t;
struct IdKey {
  std::array<std::uint8_t, 4> b;
  explicit IdKey(XorbId id) { store_be32(b.data(), id); }
  MDB_val mdb() const { return val(b.data(), 4); }
};

// ---- xorb record: xorbs[id] -----------------------------------------------
// 0  u32 flags (bit 0: keyed, bit 1: compact, bit 2: dense; not 1 and 2)
// 4  u32 num_chunks (n)   8  key[32] (zero when raw)   40  u64 reserved
// 48 the 48-byte XorbHeader as stored
// 96 the chunks, in one of three layouts:
//    verbatim: the 48-byte CAS chunk entries as stored;
//    compact:  per chunk, stored hash[32], u32 byte_start | (eligible << 31):
//              36 bytes a chunk;
//    dense:    per chunk, stored hash[32], u24 (LE): the chunk's
//              byte_start less that of the first chunk of its group of 64
//              (chunks 64k..64k+63), | (eligible << 23); then ceil(n / 64)
//              x u32 checkpoint: the byte_start of chunk 64k. 35 bytes a
//              chunk and 4 a group.
// Compact and dense rebuild the exact bytes only when byte_start is the
// running sum of unpacked sizes, the last chunk ends at bytes_in_xorb (so
// unpacked sizes follow from the starts), flags are 0 or the eligibility bit,
// the unused word is 0, and bytes_in_xorb < 2^31. Every writer we know of
// produces that. Dense also needs each chunk to start less than 2^23 bytes
// after its group's first chunk: at most 63 chunks come before it in the
// group, and a Xet chunk holds at most 128 KiB, so real xorbs always fit.
// The writer picks dense, else compact, else verbatim; readers take all
// three (indexes written before dense hold the other two).
// Why dense: xorb records are most of the index (36.3 of its 47.8 bytes an
// entry at 10 M entries, docs/PERFORMANCE.md), and a 3-byte offset instead
// of compact's 4 saves about 1 byte an entry. Access stays O(1): a range is
// one checkpoint plus one or two offsets. A chunk's hash and offset sit
// side by side, as in compact: a lookup of a large index reads them from
// memory the cache does not hold, and apart (the hashes first, the offsets
// after) they cost one more miss a hit (json-lines at 30 M entries: 0.60x
// bare, against 0.74x with compact records).
inline constexpr std::size_t kXorbRecordHeader = 96;
inline constexpr std::uint32_t kXorbKeyed = 1, kXorbCompact = 2, kXorbDense = 4;
inline constexpr std::size_t kXorbCompactEntry = 36;
inline constexpr std::size_t kXorbDenseEntry = 35;             // hash and 3-byte offset, before the checkpoints
inline constexpr std::uint32_t kXorbDenseGroup = 64;           // chunks per checkpoint
inline constexpr std::uint32_t kXorbDenseSpan = 1u << 23;      // offsets within a group are below this
inline constexpr std::uint32_t kXorbDenseEligible = 1u << 23;  // in the 3-byte offset

enum class XorbLayout : std::uint8_t { verbatim, compact, dense };
// The record's size for n chunks in that layout.
inline std::uint64_t xorb_record_size(XorbLayout layout, std::uint32_t n) {
  switch (layout) {
    case XorbLayout::compact:
      return kXorbRecordHeader + kXorbCompactEntry * std::uint64_t(n);
    case XorbLayout::dense:
      return kXorbRecordHeader + kXorbDenseEntry * std::uint64_t(n) +
             4 * ((std::uint64_t(n) + kXorbDenseGroup - 1) / kXorbDenseGroup);
    case XorbLayout::verbatim:
      break;
  }
  return kXorbRecordHeader + shard::kEntrySize * std::uint64_t(n);
}

struct XorbPlan {
  XorbLayout layout = XorbLayout::verbatim;
  std::size_t size = 0;
};
XorbPlan plan_xorb_record(const shard::XorbBlock& block);
// Lays the record out in plan.layout: plan_xorb_record's choice, or a less
// dense layout that also rebuilds the block (compact for a dense plan,
// verbatim for any); plan.size is that layout's xorb_record_size.
void encode_xorb_record(std::uint8_t* dst, const Key& key, const shard::XorbBlock& block, const XorbPlan& plan);

class XorbRecordView {
 public:
  // Checks the sizes agree; nullopt means a corrupt record. What decodes is
  // safe to read whatever its bytes: garbage gives garbage ranges, never a
  // read outside the record.
  static std::optional<XorbRecordView> decode(const MDB_val& v);
  bool keyed() const { return shard::load_u32(p_) & kXorbKeyed; }
  XorbLayout layout() const { return layout_; }
  bool compact() const { return layout_ == XorbLayout::compact; }
  bool dense() const { return layout_ == XorbLayout::dense; }
  Key key() const { return Hash::from_bytes({p_ + 8, 32}); }
  const std::uint8_t* key_bytes() const { return p_ + 8; }
  std::uint32_t num_chunks() const { return n_; }
  const std::uint8_t* xorb_hash_bytes() const { return p_ + 48; }
  Hash xorb_hash() const { return Hash::from_bytes({xorb_hash_bytes(), 32}); }
  shard::XorbHeader header() const { return shard::XorbHeader::decode(p_ + 48); }
  // The stored (keyed when keyed()) hash of chunk i.
  const std::uint8_t* chunk_hash_bytes(std::uint32_t i) const { return entry(i); }
  shard::ChunkEntry chunk(std::uint32_t i) const;
  // Byte range and flags of chunk i (< num_chunks()) without decoding its hash.
  void chunk_range(std::uint32_t i, std::uint32_t& start, std::uint32_t& unpacked, std::uint32_t& flags) const;
  // The CAS block exactly as the source shard stored it.
  std::vector<std::uint8_t> cas_block() const;
  std::span<const std::uint8_t> record() const { return {p_, size_}; }

 private:
  // Chunk i's entry: its hash, then the rest of what the layout keeps.
  const std::uint8_t* entry(std::uint32_t i) const {
    const std::size_t width = compact() ? kXorbCompactEntry : dense() ? kXorbDenseEntry : shard::kEntrySize;
    return p_ + kXorbRecordHeader + width * std::size_t(i);
  }
  // Dense: chunk i's 3-byte offset word, and its byte_start.
  std::uint32_t dense_word(std::uint32_t i) const;
  std::uint32_t dense_start(std::uint32_t i) const;
  const std::uint8_t* p_ = nullptr;
  std::uint32_t n_ = 0;
  XorbLayout layout_ = XorbLayout::verbatim;
  std::size_t size_ = 0;
};

// ---- shard record: shards[shard hash] (kept after removal) ----------------
// u8 state, u8 flags (1 footer, 2 keyed, 4 expiry, 8 scoped, 16 set aside),
// 2 pad, u32 n_paths, u64 expiry, created, size, ingested_at, ended_at,
// xorbs, chunks, files, key[32]; then n_paths x (u32 len, bytes); then,
// scoped: u32 len, CAS URL; then, set aside: u64 when, u32 len, reason.
inline constexpr std::uint8_t kShardScoped = 8, kShardSetAside = 16;
inline constexpr std::size_t kShardRecordHead = 104;
struct ShardRecord {
  ShardState state = ShardState::live;
  bool has_footer = false;
  bool keyed = false;
  bool has_expiry = false;
  std::uint64_t expiry = 0;
  std::uint64_t created = 0;
  std::uint64_t size = 0;
  std::uint64_t ingested_at = 0;
  std::uint64_t ended_at = 0;
  std::uint64_t xorbs = 0, chunks = 0, files = 0;
  Key key;
  std::vector<std::string> paths;
  // Schema 7: the CAS the shard was uploaded to or downloaded from (its
  // normalized URL; empty: unknown), and whether global-dedup answers left it
  // aside (the CAS refused an upload that relied on it), when and why.
  // Both follow the paths, each only when its flag bit (8, 16) is set, so a
  // record written before 7 reads as unknown and not set aside.
  std::string cas;
  bool set_aside = false;
  std::uint64_t set_aside_at = 0;
  std::string set_aside_reason;
};
Bytes encode(const ShardRecord& r);
std::optional<ShardRecord> decode_shard(const MDB_val& v);
ShardInfo to_info(const Hash& hash, const ShardRecord& r);

// ---- shard contributions: shard_refs[shard hash] (live shards only) -------
// u32 n_xorbs, u32 n_files, n_xorbs x u32 xorb id (LE), n_files x file hash,
// then (schema 3) n_files x u8 file flags: what this shard said of each
// file. A file record is shared by every shard listing the file and keeps
// the richest description (ingest.cpp), and an empty file's flags are
// nowhere else, so only these rebuild the shard as it was. Records written
// before schema 3 lack them (file_flags empty).
// Each id and file appears once even when the shard lists it twice.
inline constexpr std::uint8_t kRefVerification = 1, kRefMetadataExt = 2;
struct ShardRefs {
  std::vector<XorbId> xorbs;
  std::vector<Hash> files;
  std::vector<std::uint8_t> file_flags;  // one per file, or empty (written before schema 3)
};
std::uint8_t ref_flags_of(const shard::FileHeader& h);
Bytes encode(const ShardRefs& r);
std::optional<ShardRefs> decode_refs(const MDB_val& v);

// ---- file record: files[file hash] ----------------------------------------
// u32 flags (0), u32 reserved, then the file-info block as stored.
inline constexpr std::size_t kFileRecordHeader = 8;
// block_bytes: the file block as the shard stores it (FileBlock::byte_size()).
Bytes encode_file_record(std::span<const std::uint8_t> block_bytes);
std::optional<shard::FileBlock> decode_file(const MDB_val& v);

// ---- sources[blake3(path)] -------------------------------------------------
// u8 kind (1 accepted, 2 rejected), 7 pad, u64 size, i64 mtime_ns,
// hash[32] (shard / content hash), u8 has_hash, 7 pad, u64 offset,
// u64 recorded_at, u32 len(rule), u32 len(message), u32 len(path), strings.
struct Source {
  bool rejected = false;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::optional<Hash> hash;
  std::uint64_t offset = 0;
  std::uint64_t recorded_at = 0;
  std::string rule, message, path;
};
Bytes encode(const Source& s);
std::optional<Source> decode_source(const MDB_val& v);
Hash source_key(const std::string& path);

// ---- expired_forms[shard hash] (schema 4) ----------------------------------
// What an expired shard held, kept a while after it expired (tuning.hpp) so
// that a query for one of its chunks can say why it is no longer found
// instead of a bare "not found". Its entries are gone from the chunk tables
// (an expired shard must not answer), so the forms it stored are kept
// apart: u8 flags (bit 0: keyed), 7 pad, u64 expiry, u64 recorded_at,
// key[32] (zero when raw), u32 count, 4 pad, then `count` distinct 8-byte
// prefixes of the stored (keyed) chunk hashes in memcmp order. 64 bits of a
// hash only make a hint: a false match costs one misleading sentence, at
// odds of count / 2^64.
inline constexpr std::size_t kExpiredFormsHeader = 64;
inline constexpr std::size_t kExpiredFormBytes = 8;
using ExpiredForm = std::array<std::uint8_t, kExpiredFormBytes>;
inline ExpiredForm expired_form(const std::uint8_t* stored_hash) {
  ExpiredForm f;
  std::memcpy(f.data(), stored_hash, kExpiredFormBytes);
  return f;
}
struct ExpiredForms {
  bool keyed = false;
  std::uint64_t expiry = 0;
  std::uint64_t recorded_at = 0;
  Key key{};
  std::vector<ExpiredForm> forms;  // any order; encode sorts and dedups
};
Bytes encode(ExpiredForms r);
class ExpiredFormsView {
 public:
  // nullopt: a corrupt record (sizes disagree).
  static std::optional<ExpiredFormsView> decode(const MDB_val& v);
  bool keyed() const { return p_[0] & 1; }
  std::uint64_t expiry() const { return shard::load_u64(p_ + 8); }
  std::uint64_t recorded_at() const { return shard::load_u64(p_ + 16); }
  Key key() const { return Hash::from_bytes({p_ + 24, 32}); }
  std::uint32_t count() const { return n_; }
  // True when a stored hash with this form's prefix was in the shard.
  bool holds(const std::uint8_t* stored_hash) const;

 private:
  const std::uint8_t* p_ = nullptr;
  std::uint32_t n_ = 0;
};

// ---- expiry[u64 BE instant] -> dup shard hashes ----------------------------
struct ExpiryKey {
  std::array<std::uint8_t, 8> b;
  explicit ExpiryKey(std::uint64_t t) { store_be64(b.data(), t); }
  MDB_val mdb() const { return val(b.data(), 8); }
};

}  // namespace dedupd::index::records
