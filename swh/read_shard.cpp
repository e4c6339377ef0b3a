#include "swh/read_shard.hpp"

#include <cmph.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string_view>
#include <utility>
#include <vector>

#include "shard/bytes.hpp"
#include "swh/errors.hpp"

namespace dedupd::swh {
namespace {

using shard::load_be64;
using shard::load_u32;

// ---- validation of a CHD_PH dump (see read_shard.hpp) --------------------
//
// Layout, as cmph 2.0.2 writes it (cmph_structs.c __cmph_dump, chd_ph.c
// chd_ph_dump, hash.c/jenkins_hash.c, compressed_seq.c, select.c), u32 LE:
//   "chd_ph\0" size
//   hl_len ("jenkins\0" seed)
//   cs_len (n rem_r total_length sel_len (sel_n sel_m bits_vec select_table)
//           length_rems store_table)
//   n nbuckets
struct DumpInfo {
  std::uint64_t end = 0;  // absolute end of the dump
};

class Cursor {
 public:
  Cursor(std::span<const std::uint8_t> b, std::uint64_t base) : b_(b), base_(base) {}
  bool u32(std::uint32_t* v) {
    if (b_.size() - pos_ < 4) return false;
    *v = load_u32(b_.data() + pos_);
    pos_ += 4;
    return true;
  }
  bool bytes(std::uint64_t n, const std::uint8_t** p) {
    if (b_.size() - pos_ < n) return false;
    *p = b_.data() + pos_;
    pos_ += n;
    return true;
  }
  std::uint64_t at() const { return base_ + pos_; }

 private:
  std::span<const std::uint8_t> b_;
  std::uint64_t base_;
  std::uint64_t pos_ = 0;
};

Result<DumpInfo> validate_dump(std::span<const std::uint8_t> dump, std::uint64_t base, std::uint64_t slots) {
  Cursor c(dump, base);
  auto bad = [&](const std::string& what) { return err("swh.hash", c.at(), what); };
  const std::uint8_t* p = nullptr;
  static constexpr std::string_view kAlgo("chd_ph\0", 7);
  static constexpr std::string_view kJenkins("jenkins\0", 8);
  if (!c.bytes(kAlgo.size(), &p) || std::memcmp(p, kAlgo.data(), kAlgo.size()) != 0) {
    return err("swh.hash", base, "hash function is not a cmph chd_ph dump");
  }
  std::uint32_t size = 0, hl_len = 0, cs_len = 0;
  if (!c.u32(&size)) return bad("dump truncated (size)");
  if (!c.u32(&hl_len)) return bad("dump truncated (hash state length)");
  if (hl_len != kJenkins.size() + 4) return bad("hash state is not a Jenkins state");
  if (!c.bytes(hl_len, &p) || std::memcmp(p, kJenkins.data(), kJenkins.size()) != 0) {
    return bad("hash state is not a Jenkins state");
  }
  if (!c.u32(&cs_len)) return bad("dump truncated (sequence length)");
  const std::uint64_t cs_at = c.at();
  const std::uint8_t* cs = nullptr;
  if (!c.bytes(cs_len, &cs)) return bad("dump truncated (displacement sequence)");
  std::uint32_t n = 0, nbuckets = 0;
  if (!c.u32(&n) || !c.u32(&nbuckets)) return bad("dump truncated (n, nbuckets)");

  if (n != size) return err("swh.hash", base + 7, "function size and bin count differ");
  if (n != slots) {
    return err("swh.hash", base + 7,
               "function has " + std::to_string(n) + " slots, the index " + std::to_string(slots));
  }
  if (n < 2) return err("swh.hash", base + 7, "function has fewer than 2 slots");
  if (nbuckets == 0) return bad("function has no buckets");

  // The compressed displacement sequence.
  Cursor s({cs, cs_len}, cs_at);
  std::uint32_t cs_n = 0, rem_r = 0, total_length = 0, sel_len = 0, sel_n = 0, sel_m = 0;
  if (!s.u32(&cs_n) || !s.u32(&rem_r) || !s.u32(&total_length) || !s.u32(&sel_len) || !s.u32(&sel_n) ||
      !s.u32(&sel_m)) {
    return err("swh.hash", cs_at, "displacement sequence truncated");
  }
  constexpr std::uint64_t kU32 = std::numeric_limits<std::uint32_t>::max();
  if (cs_n != nbuckets || sel_n != cs_n) {
    return err("swh.hash", cs_at, "displacement sequence length does not match the buckets");
  }
  if (rem_r < 1 || rem_r > 31) return err("swh.hash", cs_at + 4, "bad remainder width");
  const std::uint64_t nbits = std::uint64_t(sel_n) + sel_m;
  const std::uint64_t rem_bits = std::uint64_t(cs_n) * rem_r;
  if (nbits + 31 > kU32 || rem_bits + 31 > kU32 || std::uint64_t(total_length) + 31 > kU32) {
    return err("swh.hash", cs_at, "displacement sequence sizes overflow");
  }
  const std::uint64_t vec_bytes = ((nbits + 31) >> 5) * 4;
  const std::uint64_t sel_table_entries = (std::uint64_t(sel_n) >> 7) + 1;
  const std::uint64_t rems_bytes = ((rem_bits + 31) >> 5) * 4;
  const std::uint64_t store_bytes = ((std::uint64_t(total_length) + 31) >> 5) * 4;
  if (sel_len != 8 + vec_bytes + sel_table_entries * 4) {
    return err("swh.hash", cs_at + 12, "select structure length is inconsistent");
  }
  if (cs_len != 16 + std::uint64_t(sel_len) + rems_bytes + store_bytes) {
    return err("swh.hash", cs_at, "displacement sequence length is inconsistent");
  }
  const std::uint8_t *bits = nullptr, *sel_table = nullptr, *rems = nullptr;
  s.bytes(vec_bytes, &bits);
  s.bytes(sel_table_entries * 4, &sel_table);
  s.bytes(rems_bytes, &rems);

  // Every 1 bit of the select vector, as cmph's byte-wise rank/select sees
  // them; there must be exactly one per bucket.
  std::vector<std::uint32_t> ones;
  ones.reserve(sel_n);
  for (std::uint64_t i = 0; i < vec_bytes; ++i) {
    for (std::uint8_t b = bits[i]; b; b &= static_cast<std::uint8_t>(b - 1)) {
      if (ones.size() == sel_n) return err("swh.hash", cs_at + 24 + i, "select vector has too many ones");
      ones.push_back(static_cast<std::uint32_t>(i * 8 + static_cast<unsigned>(__builtin_ctz(b))));
    }
  }
  if (ones.size() != sel_n) return err("swh.hash", cs_at + 24, "select vector has too few ones");
  for (std::uint64_t k = 0; k * 128 < sel_n; ++k) {
    if (load_u32(sel_table + 4 * k) != ones[k * 128]) {
      return err("swh.hash", cs_at + 24 + vec_bytes + 4 * k, "select table does not match its vector");
    }
  }
  // Replay compressed_seq_query for every bucket and bound what it reads.
  const std::uint32_t mask = (1u << rem_r) - 1u;
  auto rem = [&](std::uint32_t idx) {
    std::uint64_t bit = std::uint64_t(idx) * rem_r;
    std::uint64_t word = bit >> 5;
    std::uint32_t shift = static_cast<std::uint32_t>(bit & 31);
    std::uint32_t v = (load_u32(rems + 4 * word) >> shift) & mask;
    if (32 - shift < rem_r) v |= (load_u32(rems + 4 * (word + 1)) << (32 - shift)) & mask;
    return v;
  };
  for (std::uint32_t idx = 0; idx < cs_n; ++idx) {
    std::uint32_t enc_idx = 0;
    if (idx > 0) enc_idx = ((ones[idx - 1] - (idx - 1)) << rem_r) + rem(idx - 1);
    std::uint32_t enc_len = ((ones[idx] - idx) << rem_r) + rem(idx) - enc_idx;
    if (enc_len == 0) continue;
    if (enc_len > 31 || std::uint64_t(enc_idx) + enc_len > total_length) {
      return err("swh.hash", cs_at, "displacement " + std::to_string(idx) + " is out of range");
    }
  }
  return DumpInfo{c.at()};
}

}  // namespace

Reader::Reader(Reader&& o) noexcept
    : file_(std::move(o.file_)),
      bytes_(o.bytes_),
      header_(o.header_),
      content_end_(o.content_end_),
      hash_(std::exchange(o.hash_, nullptr)) {}

Reader& Reader::operator=(Reader&& o) noexcept {
  if (this != &o) {
    if (hash_) cmph_destroy(static_cast<cmph_t*>(hash_));
    file_ = std::move(o.file_);
    bytes_ = o.bytes_;
    header_ = o.header_;
    content_end_ = o.content_end_;
    hash_ = std::exchange(o.hash_, nullptr);
  }
  return *this;
}

Reader::~Reader() {
  if (hash_) cmph_destroy(static_cast<cmph_t*>(hash_));
}

Result<Reader> Reader::open(const std::string& path) {
  auto mapped = shard::MappedFile::open(path);
  if (!mapped) return mapped.error();
  Reader r;
  r.file_ = std::move(mapped.value());
  r.bytes_ = r.file_.bytes();
  return init(std::move(r));
}

Result<Reader> Reader::from_bytes(std::span<const std::uint8_t> bytes) {
  Reader r;
  r.bytes_ = bytes;
  return init(std::move(r));
}

Result<Reader> Reader::init(Reader r) {
  const auto b = r.bytes_;
  const std::uint64_t size = b.size();
  if (size < kHeaderOffset + kHeaderSize) {
    return err("swh.truncated", 0, "file is " + std::to_string(size) + " bytes, shorter than the header");
  }
  if (std::memcmp(b.data(), kMagic, kMagicWritten) != 0) {
    return err("swh.magic", 0, "no SWHShard magic");
  }
  Header& h = r.header_;
  std::uint64_t* fields[7] = {&h.version,        &h.objects_count, &h.objects_position, &h.objects_size,
                              &h.index_position, &h.index_size,    &h.hash_position};
  for (int i = 0; i < 7; ++i) *fields[i] = load_be64(b.data() + kHeaderOffset + 8 * i);
  if (h.version != kVersion) {
    return err("swh.version", kHeaderOffset,
               "version " + std::to_string(h.version) + ", expected " + std::to_string(kVersion));
  }
  auto bad = [&](int field, const std::string& what) {
    return err("swh.header", kHeaderOffset + 8 * std::uint64_t(field), what);
  };
  if (h.objects_position < kHeaderOffset + kHeaderSize || h.objects_position > size) {
    return bad(2, "objects_position outside the file");
  }
  if (h.objects_size > size - h.objects_position) return bad(3, "objects_size runs past the file");
  if (h.index_position != h.objects_position + h.objects_size) {
    return bad(4, "index_position does not follow the objects");
  }
  if (h.index_size > size - h.index_position) return bad(5, "index_size runs past the file");
  if (h.index_size % kIndexEntrySize != 0) return bad(5, "index_size is not a multiple of 40");
  if (h.hash_position != h.index_position + h.index_size) {
    return bad(6, "hash_position does not follow the index");
  }
  if (h.objects_count > h.index_size / kIndexEntrySize) return bad(1, "more objects than index slots");
  if (h.objects_count > h.objects_size / 8) return bad(1, "more objects than the objects section holds");

  auto dump = validate_dump(b.subspan(h.hash_position), h.hash_position, h.index_size / kIndexEntrySize);
  if (!dump) return dump.error();
  r.content_end_ = dump->end;

  const std::uint64_t dump_len = dump->end - h.hash_position;
  FILE* f = ::fmemopen(const_cast<std::uint8_t*>(b.data() + h.hash_position), dump_len, "rb");
  if (!f) return err("swh.hash", h.hash_position, "fmemopen failed: " + errno_text());
  cmph_t* hash = cmph_load(f);
  ::fclose(f);
  if (!hash) return err("swh.hash", h.hash_position, "cmph_load failed");
  r.hash_ = hash;
  if (cmph_size(hash) != r.slots()) {
    return err("swh.hash", h.hash_position, "cmph_size does not match the index");
  }
  return r;
}

IndexEntry Reader::entry(std::uint64_t slot) const {
  IndexEntry e;
  const std::uint8_t* p = bytes_.data() + header_.index_position + slot * kIndexEntrySize;
  std::memcpy(e.key.data(), p, kKeySize);
  e.object_offset = load_be64(p + kKeySize);
  return e;
}

std::uint64_t Reader::slot_of(const Key& key) const {
  return cmph_search(static_cast<cmph_t*>(hash_), reinterpret_cast<const char*>(key.data()), kKeySize);
}

Result<std::optional<std::span<const std::uint8_t>>> Reader::lookup(const Key& key) const {
  using Found = std::optional<std::span<const std::uint8_t>>;
  const std::uint64_t slot = slot_of(key);
  const std::uint64_t at = header_.index_position + slot * kIndexEntrySize;
  if (slot >= slots()) return err("swh.hash", at, "hash function returned a slot past the index");
  const IndexEntry e = entry(slot);
  if (e.empty()) return Found{};
  if (e.key != key) return Found{};
  const std::uint64_t obj_begin = header_.objects_position;
  const std::uint64_t obj_end = header_.index_position;
  if (e.object_offset < obj_begin || e.object_offset > obj_end || obj_end - e.object_offset < 8) {
    return err("swh.object", at + kKeySize,
               "object offset " + std::to_string(e.object_offset) + " outside the objects section");
  }
  const std::uint64_t size = load_be64(bytes_.data() + e.object_offset);
  if (size > obj_end - e.object_offset - 8) {
    return err("swh.object", e.object_offset, "object size " + std::to_string(size) + " runs past the objects section");
  }
  return Found{bytes_.subspan(e.object_offset + 8, size)};
}

}  // namespace dedupd::swh
