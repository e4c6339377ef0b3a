#include "index/records.hpp"

#include <algorithm>

#include "shard/keys.hpp"

namespace dedupd::index::records {

namespace {

// Appends a record's fields in their stored byte order.
class RecordWriter {
 public:
  explicit RecordWriter(std::size_t reserve = 0) { b_.reserve(reserve); }
  void u8(std::uint8_t v) { b_.push_back(v); }
  void pad(std::size_t n) { b_.insert(b_.end(), n, 0); }
  void u32(std::uint32_t v) { raw(&v, 4); }
  void u64(std::uint64_t v) { raw(&v, 8); }
  void hash(const Hash& h) { raw(h.data(), 32); }
  void str(const std::string& s) { raw(s.data(), s.size()); }
  void raw(const void* p, std::size_t n) {
    auto c = static_cast<const std::uint8_t*>(p);
    b_.insert(b_.end(), c, c + n);
  }
  Bytes take() { return std::move(b_); }

 private:
  Bytes b_;
};

// Bounds-checked reads: a damaged record decodes to nullopt, never a crash.
class RecordReader {
 public:
  explicit RecordReader(const MDB_val& v) : p_(static_cast<const std::uint8_t*>(v.mv_data)), n_(v.mv_size) {}
  bool ok() const { return ok_; }
  bool at_end() const { return ok_ && pos_ == n_; }
  const std::uint8_t* take(std::size_t k) {
    if (!ok_ || n_ - pos_ < k) {
      ok_ = false;
      return nullptr;
    }
    const std::uint8_t* r = p_ + pos_;
    pos_ += k;
    return r;
  }
  std::uint8_t u8() {
    auto p = take(1);
    return p ? *p : 0;
  }
  void skip(std::size_t k) { take(k); }
  std::uint32_t u32() {
    auto p = take(4);
    return p ? shard::load_u32(p) : 0;
  }
  std::uint64_t u64() {
    auto p = take(8);
    return p ? shard::load_u64(p) : 0;
  }
  Hash hash() {
    auto p = take(32);
    return p ? Hash::from_bytes({p, 32}) : Hash{};
  }
  std::string str(std::size_t k) {
    auto p = take(k);
    return p ? std::string(reinterpret_cast<const char*>(p), k) : std::string();
  }

 private:
  const std::uint8_t* p_;
  std::size_t n_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace

XorbPlan plan_xorb_record(const shard::XorbBlock& block) {
  const std::uint32_t n = block.num_chunks();
  const std::uint32_t total = block.header().bytes_in_xorb;
  bool compact = total < (1u << 31), dense = true;
  std::uint64_t at = 0, group = 0;
  for (std::uint32_t i = 0; i < n && compact; ++i) {
    shard::ChunkEntry c = block.chunk(i);
    compact = c.byte_start == at && c.unused == 0 && (c.flags & ~shard::kChunkFlagGlobalDedupEligible) == 0;
    if (i % kXorbDenseGroup == 0) group = at;
    dense = dense && at - group < kXorbDenseSpan;
    at += c.unpacked_bytes;
  }
  compact = compact && at == total;
  XorbLayout layout = !compact ? XorbLayout::verbatim : dense ? XorbLayout::dense : XorbLayout::compact;
  return {layout, std::size_t(xorb_record_size(layout, n))};
}

void encode_xorb_record(std::uint8_t* dst, const Key& key, const shard::XorbBlock& block, const XorbPlan& plan) {
  const std::uint32_t n = block.num_chunks();
  std::uint32_t flags = key.is_zero() ? 0u : kXorbKeyed;
  if (plan.layout == XorbLayout::compact) flags |= kXorbCompact;
  if (plan.layout == XorbLayout::dense) flags |= kXorbDense;
  std::memset(dst, 0, kXorbRecordHeader);
  shard::store_u32(dst, flags);
  shard::store_u32(dst + 4, n);
  std::memcpy(dst + 8, key.data(), 32);
  auto raw = block.raw();
  std::memcpy(dst + 48, raw.data(), shard::kEntrySize);
  std::uint8_t* p = dst + kXorbRecordHeader;
  switch (plan.layout) {
    case XorbLayout::verbatim:
      std::memcpy(p, raw.data() + shard::kEntrySize, raw.size() - shard::kEntrySize);
      return;
    case XorbLayout::compact:
      for (std::uint32_t i = 0; i < n; ++i, p += kXorbCompactEntry) {
        shard::ChunkEntry c = block.chunk(i);
        std::memcpy(p, block.chunk_hash_bytes(i), 32);
        shard::store_u32(p + 32, c.byte_start | (c.flags & shard::kChunkFlagGlobalDedupEligible));
      }
      return;
    case XorbLayout::dense: {
      std::uint8_t* checkpoints = p + kXorbDenseEntry * std::size_t(n);
      std::uint32_t group = 0;
      for (std::uint32_t i = 0; i < n; ++i) {
        shard::ChunkEntry c = block.chunk(i);
        std::uint8_t* e = p + kXorbDenseEntry * std::size_t(i);
        std::memcpy(e, block.chunk_hash_bytes(i), 32);
        if (i % kXorbDenseGroup == 0) {
          group = c.byte_start;
          shard::store_u32(checkpoints + 4 * std::size_t(i / kXorbDenseGroup), group);
        }
        std::uint32_t w = (c.byte_start - group) | (c.global_dedup_eligible() ? kXorbDenseEligible : 0u);
        e[32] = std::uint8_t(w), e[33] = std::uint8_t(w >> 8), e[34] = std::uint8_t(w >> 16);
      }
      return;
    }
  }
}

std::optional<XorbRecordView> XorbRecordView::decode(const MDB_val& v) {
  if (v.mv_size < kXorbRecordHeader) return std::nullopt;
  XorbRecordView r;
  r.p_ = static_cast<const std::uint8_t*>(v.mv_data);
  r.n_ = shard::load_u32(r.p_ + 4);
  r.size_ = v.mv_size;
  const std::uint32_t flags = shard::load_u32(r.p_);
  if ((flags & kXorbCompact) && (flags & kXorbDense)) return std::nullopt;
  r.layout_ = flags & kXorbDense     ? XorbLayout::dense
              : flags & kXorbCompact ? XorbLayout::compact
                                     : XorbLayout::verbatim;
  if (std::uint64_t(v.mv_size) != xorb_record_size(r.layout_, r.n_)) return std::nullopt;
  if (shard::XorbHeader::decode(r.p_ + 48).num_entries != r.n_) return std::nullopt;
  return r;
}

std::uint32_t XorbRecordView::dense_word(std::uint32_t i) const {
  const std::uint8_t* o = entry(i) + 32;
  return std::uint32_t(o[0]) | std::uint32_t(o[1]) << 8 | std::uint32_t(o[2]) << 16;
}

std::uint32_t XorbRecordView::dense_start(std::uint32_t i) const {
  const std::uint8_t* checkpoint =
      p_ + kXorbRecordHeader + kXorbDenseEntry * std::size_t(n_) + 4 * std::size_t(i / kXorbDenseGroup);
  return shard::load_u32(checkpoint) + (dense_word(i) & ~kXorbDenseEligible);
}

void XorbRecordView::chunk_range(std::uint32_t i, std::uint32_t& start, std::uint32_t& unpacked,
                                 std::uint32_t& flags) const {
  if (dense()) {
    start = dense_start(i);
    flags = dense_word(i) & kXorbDenseEligible ? shard::kChunkFlagGlobalDedupEligible : 0u;
    std::uint32_t end = i + 1 < n_ ? dense_start(i + 1) : header().bytes_in_xorb;
    unpacked = end - start;
    return;
  }
  const std::uint8_t* e = entry(i);
  if (!compact()) {
    start = shard::load_u32(e + 32);
    unpacked = shard::load_u32(e + 36);
    flags = shard::load_u32(e + 40);
    return;
  }
  std::uint32_t w = shard::load_u32(e + 32);
  start = w & ~shard::kChunkFlagGlobalDedupEligible;
  flags = w & shard::kChunkFlagGlobalDedupEligible;
  std::uint32_t end =
      i + 1 < n_ ? shard::load_u32(entry(i + 1) + 32) & ~shard::kChunkFlagGlobalDedupEligible : header().bytes_in_xorb;
  unpacked = end - start;
}

shard::ChunkEntry XorbRecordView::chunk(std::uint32_t i) const {
  if (layout_ == XorbLayout::verbatim) return shard::ChunkEntry::decode(entry(i));
  shard::ChunkEntry c;
  c.chunk_hash = Hash::from_bytes({chunk_hash_bytes(i), 32});
  chunk_range(i, c.byte_start, c.unpacked_bytes, c.flags);
  return c;
}

std::vector<std::uint8_t> XorbRecordView::cas_block() const {
  std::vector<std::uint8_t> out(shard::kEntrySize * (1 + std::size_t(n_)));
  std::memcpy(out.data(), p_ + 48, shard::kEntrySize);
  if (layout_ == XorbLayout::verbatim) {
    std::memcpy(out.data() + shard::kEntrySize, p_ + kXorbRecordHeader, shard::kEntrySize * std::size_t(n_));
    return out;
  }
  for (std::uint32_t i = 0; i < n_; ++i) chunk(i).encode(out.data() + shard::kEntrySize * (1 + std::size_t(i)));
  return out;
}

Bytes encode(const ShardRecord& r) {
  RecordWriter o(128);
  o.u8(std::uint8_t(r.state));
  o.u8(std::uint8_t((r.has_footer ? 1 : 0) | (r.keyed ? 2 : 0) | (r.has_expiry ? 4 : 0) |
                    (r.cas.empty() ? 0 : kShardScoped) | (r.set_aside ? kShardSetAside : 0)));
  o.pad(2);
  o.u32(std::uint32_t(r.paths.size()));
  o.u64(r.expiry);
  o.u64(r.created);
  o.u64(r.size);
  o.u64(r.ingested_at);
  o.u64(r.ended_at);
  o.u64(r.xorbs);
  o.u64(r.chunks);
  o.u64(r.files);
  o.hash(r.key);
  for (const auto& p : r.paths) {
    o.u32(std::uint32_t(p.size()));
    o.str(p);
  }
  if (!r.cas.empty()) {
    o.u32(std::uint32_t(r.cas.size()));
    o.str(r.cas);
  }
  if (r.set_aside) {
    o.u64(r.set_aside_at);
    o.u32(std::uint32_t(r.set_aside_reason.size()));
    o.str(r.set_aside_reason);
  }
  return o.take();
}

std::optional<ShardRecord> decode_shard(const MDB_val& v) {
  RecordReader in(v);
  ShardRecord r;
  std::uint8_t state = in.u8();
  if (state < 1 || state > 3) return std::nullopt;
  r.state = ShardState(state);
  std::uint8_t flags = in.u8();
  r.has_footer = flags & 1, r.keyed = flags & 2, r.has_expiry = flags & 4;
  in.skip(2);
  std::uint32_t npaths = in.u32();
  r.expiry = in.u64();
  r.created = in.u64();
  r.size = in.u64();
  r.ingested_at = in.u64();
  r.ended_at = in.u64();
  r.xorbs = in.u64();
  r.chunks = in.u64();
  r.files = in.u64();
  r.key = in.hash();
  for (std::uint32_t i = 0; i < npaths && in.ok(); ++i) r.paths.push_back(in.str(in.u32()));
  if (flags & kShardScoped) r.cas = in.str(in.u32());
  if (flags & kShardSetAside) {
    r.set_aside = true;
    r.set_aside_at = in.u64();
    r.set_aside_reason = in.str(in.u32());
  }
  if (!in.at_end()) return std::nullopt;
  return r;
}

ShardInfo to_info(const Hash& hash, const ShardRecord& r) {
  ShardInfo s;
  s.hash = hash;
  s.state = r.state;
  s.paths = r.paths;
  s.size = r.size;
  s.has_footer = r.has_footer;
  if (r.has_footer) s.created = r.created;
  if (r.has_expiry) s.expiry = r.expiry;
  s.keyed = r.keyed;
  s.key = r.key;
  s.xorbs = r.xorbs, s.chunks = r.chunks, s.files = r.files;
  s.ingested_at = r.ingested_at;
  s.ended_at = r.ended_at;
  s.cas = r.cas;
  s.set_aside = r.set_aside;
  s.set_aside_at = r.set_aside_at;
  s.set_aside_reason = r.set_aside_reason;
  return s;
}

std::uint8_t ref_flags_of(const shard::FileHeader& h) {
  return std::uint8_t((h.with_verification() ? kRefVerification : 0) | (h.with_metadata_ext() ? kRefMetadataExt : 0));
}

Bytes encode(const ShardRefs& r) {
  RecordWriter o(8 + 4 * r.xorbs.size() + 32 * r.files.size() + r.file_flags.size());
  o.u32(std::uint32_t(r.xorbs.size()));
  o.u32(std::uint32_t(r.files.size()));
  for (XorbId id : r.xorbs) o.u32(id);
  for (const auto& f : r.files) o.hash(f);
  o.raw(r.file_flags.data(), r.file_flags.size());
  return o.take();
}

std::optional<ShardRefs> decode_refs(const MDB_val& v) {
  RecordReader in(v);
  std::uint32_t nx = in.u32(), nf = in.u32();
  const std::uint64_t without_flags = 8 + 4 * std::uint64_t(nx) + 32 * std::uint64_t(nf);
  if (!in.ok() || (v.mv_size != without_flags && v.mv_size != without_flags + nf)) return std::nullopt;
  ShardRefs r;
  r.xorbs.reserve(nx);
  r.files.reserve(nf);
  for (std::uint32_t i = 0; i < nx; ++i) r.xorbs.push_back(in.u32());
  for (std::uint32_t i = 0; i < nf; ++i) r.files.push_back(in.hash());
  if (v.mv_size != without_flags) {
    auto p = static_cast<const std::uint8_t*>(v.mv_data) + without_flags;
    r.file_flags.assign(p, p + nf);
  }
  return r;
}

Bytes encode_file_record(std::span<const std::uint8_t> block_bytes) {
  RecordWriter o(kFileRecordHeader + block_bytes.size());
  o.u32(0);
  o.u32(0);
  o.raw(block_bytes.data(), block_bytes.size());
  return o.take();
}

std::optional<shard::FileBlock> decode_file(const MDB_val& v) {
  if (v.mv_size < kFileRecordHeader + shard::kEntrySize) return std::nullopt;
  auto p = static_cast<const std::uint8_t*>(v.mv_data) + kFileRecordHeader;
  shard::FileBlock block(p, 0);
  if (block.byte_size() != v.mv_size - kFileRecordHeader) return std::nullopt;
  return block;
}

Bytes encode(const Source& s) {
  RecordWriter o(96 + s.rule.size() + s.message.size() + s.path.size());
  o.u8(s.rejected ? 2 : 1);
  o.pad(7);
  o.u64(s.size);
  o.u64(std::uint64_t(s.mtime_ns));
  o.hash(s.hash.value_or(Hash{}));
  o.u8(s.hash ? 1 : 0);
  o.pad(7);
  o.u64(s.offset);
  o.u64(s.recorded_at);
  o.u32(std::uint32_t(s.rule.size()));
  o.u32(std::uint32_t(s.message.size()));
  o.u32(std::uint32_t(s.path.size()));
  o.str(s.rule);
  o.str(s.message);
  o.str(s.path);
  return o.take();
}

std::optional<Source> decode_source(const MDB_val& v) {
  RecordReader in(v);
  Source s;
  std::uint8_t kind = in.u8();
  if (kind != 1 && kind != 2) return std::nullopt;
  s.rejected = kind == 2;
  in.skip(7);
  s.size = in.u64();
  s.mtime_ns = std::int64_t(in.u64());
  Hash h = in.hash();
  if (in.u8()) s.hash = h;
  in.skip(7);
  s.offset = in.u64();
  s.recorded_at = in.u64();
  std::uint32_t lr = in.u32(), lm = in.u32(), lp = in.u32();
  s.rule = in.str(lr);
  s.message = in.str(lm);
  s.path = in.str(lp);
  if (!in.at_end()) return std::nullopt;
  return s;
}

Bytes encode(ExpiredForms r) {
  std::sort(r.forms.begin(), r.forms.end());
  r.forms.erase(std::unique(r.forms.begin(), r.forms.end()), r.forms.end());
  RecordWriter o(kExpiredFormsHeader + r.forms.size() * kExpiredFormBytes);
  o.u8(r.keyed ? 1 : 0);
  o.pad(7);
  o.u64(r.expiry);
  o.u64(r.recorded_at);
  o.hash(r.key);
  o.u32(std::uint32_t(r.forms.size()));
  o.pad(4);
  for (const auto& f : r.forms) o.raw(f.data(), f.size());
  return o.take();
}

std::optional<ExpiredFormsView> ExpiredFormsView::decode(const MDB_val& v) {
  if (v.mv_size < kExpiredFormsHeader) return std::nullopt;
  ExpiredFormsView out;
  out.p_ = static_cast<const std::uint8_t*>(v.mv_data);
  out.n_ = shard::load_u32(out.p_ + 56);
  if (v.mv_size != kExpiredFormsHeader + std::size_t(out.n_) * kExpiredFormBytes) return std::nullopt;
  return out;
}

bool ExpiredFormsView::holds(const std::uint8_t* stored_hash) const {
  std::size_t lo = 0, hi = n_;
  const std::uint8_t* forms = p_ + kExpiredFormsHeader;
  while (lo < hi) {
    std::size_t mid = (lo + hi) / 2;
    int c = std::memcmp(forms + mid * kExpiredFormBytes, stored_hash, kExpiredFormBytes);
    if (c == 0) return true;
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return false;
}

Hash source_key(const std::string& path) {
  // Paths can exceed LMDB's 511-byte key limit; a hash of the path cannot.
  return shard::blake3_keyed(Key{}, {reinterpret_cast<const std::uint8_t*>(path.data()), path.size()});
}

}  // namespace dedupd::index::records
