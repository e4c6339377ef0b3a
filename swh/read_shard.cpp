#include "swh/read_shard.hpp"

#include <cmph.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string_view>
#include <utility>

namespace dedupd::swh {
namespace {

Error err(std::string rule, std::uint64_t offset, std::string message) {
  return Error{std::move(rule), offset, std::move(message)};
}

std::uint64_t load_be64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | p[i];
  return v;
}
void store_be64(std::uint8_t* p, std::uint64_t v) {
  for (int i = 7; i >= 0; --i, v >>= 8) p[i] = static_cast<std::uint8_t>(v);
}
std::uint32_t load_le32(const std::uint8_t* p) {
  return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 | std::uint32_t(p[3]) << 24;
}

std::string errno_text() { return std::strerror(errno); }

bool write_all(int fd, const std::uint8_t* p, std::size_t n, std::uint64_t off) {
  while (n > 0) {
    ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(off));
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<std::size_t>(w);
    off += static_cast<std::uint64_t>(w);
  }
  return true;
}

// ---- cmph glue -----------------------------------------------------------

struct KeySource {
  const std::uint8_t* base;  // records, `stride` bytes apart, key first
  std::size_t stride;
  std::uint32_t count;
  std::uint32_t next = 0;
};

int ks_read(void* data, char** key, cmph_uint32* keylen) {
  auto* ks = static_cast<KeySource*>(data);
  *key = reinterpret_cast<char*>(const_cast<std::uint8_t*>(ks->base + ks->stride * ks->next));
  *keylen = kKeySize;
  ++ks->next;
  return static_cast<int>(kKeySize);
}
void ks_dispose(void*, char*, cmph_uint32) {}
void ks_rewind(void* data) { static_cast<KeySource*>(data)->next = 0; }

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
    *v = load_le32(b_.data() + pos_);
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
    if (load_le32(sel_table + 4 * k) != ones[k * 128]) {
      return err("swh.hash", cs_at + 24 + vec_bytes + 4 * k, "select table does not match its vector");
    }
  }
  // Replay compressed_seq_query for every bucket and bound what it reads.
  const std::uint32_t mask = (1u << rem_r) - 1u;
  auto rem = [&](std::uint32_t idx) {
    std::uint64_t bit = std::uint64_t(idx) * rem_r;
    std::uint64_t word = bit >> 5;
    std::uint32_t shift = static_cast<std::uint32_t>(bit & 31);
    std::uint32_t v = (load_le32(rems + 4 * word) >> shift) & mask;
    if (32 - shift < rem_r) v |= (load_le32(rems + 4 * (word + 1)) << (32 - shift)) & mask;
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

// ---- Writer ----------------------------------------------------------------

Result<Writer> Writer::create(const std::string& path) {
  Writer w;
  w.path_ = path;
  std::string tmpl = path + ".tmp.XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  int fd = ::mkstemp(buf.data());
  if (fd < 0) return err("swh.io", 0, "cannot create a temporary file beside " + path + ": " + errno_text());
  w.fd_ = fd;
  w.tmp_path_ = buf.data();
  ::fchmod(fd, 0644);
  return w;
}

Writer::Writer(Writer&& o) noexcept
    : path_(std::move(o.path_)),
      tmp_path_(std::move(o.tmp_path_)),
      fd_(std::exchange(o.fd_, -1)),
      pos_(o.pos_),
      records_(std::move(o.records_)),
      buffer_(std::move(o.buffer_)),
      finished_(o.finished_) {
  o.tmp_path_.clear();
}

Writer& Writer::operator=(Writer&& o) noexcept {
  if (this != &o) {
    discard();
    path_ = std::move(o.path_);
    tmp_path_ = std::move(o.tmp_path_);
    o.tmp_path_.clear();
    fd_ = std::exchange(o.fd_, -1);
    pos_ = o.pos_;
    records_ = std::move(o.records_);
    buffer_ = std::move(o.buffer_);
    finished_ = o.finished_;
  }
  return *this;
}

Writer::~Writer() { discard(); }

void Writer::discard() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!finished_ && !tmp_path_.empty()) ::unlink(tmp_path_.c_str());
  tmp_path_.clear();
}

bool Writer::flush() {
  if (buffer_.empty()) return true;
  const std::uint64_t at = pos_ - buffer_.size();
  const bool ok = write_all(fd_, buffer_.data(), buffer_.size(), at);
  buffer_.clear();
  return ok;
}

Result<std::uint64_t> Writer::add(const Key& key, std::span<const std::uint8_t> value) {
  if (fd_ < 0 || finished_) return err("swh.io", pos_, "writer is closed");
  constexpr std::size_t kBuffer = 1 << 20;
  std::uint8_t size_be[8];
  store_be64(size_be, value.size());
  const std::uint64_t at = pos_;
  if (buffer_.size() + 8 + value.size() > kBuffer && !flush()) {
    return err("swh.io", at, "cannot write objects: " + errno_text());
  }
  if (8 + value.size() > kBuffer) {
    if (!write_all(fd_, size_be, 8, at) || !write_all(fd_, value.data(), value.size(), at + 8)) {
      return err("swh.io", at, "cannot write object: " + errno_text());
    }
  } else {
    buffer_.reserve(kBuffer);
    buffer_.insert(buffer_.end(), size_be, size_be + 8);
    buffer_.insert(buffer_.end(), value.begin(), value.end());
  }
  pos_ = at + 8 + value.size();
  records_.push_back({key, at});
  return at;
}

Result<Header> Writer::finish() {
  if (fd_ < 0 || finished_) return err("swh.io", pos_, "writer is closed");
  if (!flush()) return err("swh.io", pos_, "cannot write objects: " + errno_text());
  Header h;
  h.objects_count = records_.size();
  h.objects_position = kObjectsOffset;
  h.objects_size = pos_ - kObjectsOffset;
  h.index_position = pos_;

  if (records_.size() > std::numeric_limits<std::uint32_t>::max() - 1) {
    return err("swh.too_many", 0, "cmph counts keys in 32 bits");
  }
  std::sort(records_.begin(), records_.end(), [](const Record& a, const Record& b) { return a.key < b.key; });
  for (std::size_t i = 1; i < records_.size(); ++i) {
    if (records_[i].key == records_[i - 1].key) {
      return err("swh.duplicate", std::max(records_[i].offset, records_[i - 1].offset),
                 "two objects have the same key");
    }
  }

  // The hash function, configured as swh-perfecthash's shard_hash_create().
  KeySource ks{reinterpret_cast<const std::uint8_t*>(records_.data()), sizeof(Record),
               static_cast<std::uint32_t>(records_.size())};
  static_assert(offsetof(Record, key) == 0);
  cmph_io_adapter_t source{&ks, ks.count, ks_read, ks_dispose, ks_rewind};
  cmph_config_t* config = cmph_config_new(&source);
  if (!config) return err("swh.cmph", h.index_position, "cmph_config_new failed");
  cmph_config_set_algo(config, CMPH_CHD_PH);
  cmph_config_set_graphsize(config, 0.99);
  cmph_config_set_keys_per_bin(config, 1);
  cmph_config_set_b(config, 4);
  cmph_t* hash = records_.empty() ? nullptr : cmph_new(config);
  cmph_config_destroy(config);
  if (!hash) {
    return err(
        "swh.cmph", h.index_position,
        records_.empty() ? "cmph cannot build a function over zero keys" : "cmph could not build the perfect hash");
  }
  struct HashGuard {
    cmph_t* h;
    ~HashGuard() { cmph_destroy(h); }
  } guard{hash};

  const std::uint64_t slots = cmph_size(hash);
  h.index_size = slots * kIndexEntrySize;
  h.hash_position = h.index_position + h.index_size;

  // The index, written through a shared mapping of its file range.
  if (::ftruncate(fd_, static_cast<off_t>(h.hash_position)) != 0) {
    return err("swh.io", h.index_position, "cannot size the index: " + errno_text());
  }
  const std::uint64_t page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const std::uint64_t map_off = h.index_position / page * page;
  const std::uint64_t map_len = h.hash_position - map_off;
  void* mem = ::mmap(nullptr, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, static_cast<off_t>(map_off));
  if (mem == MAP_FAILED) return err("swh.io", h.index_position, "cannot map the index: " + errno_text());
  std::uint8_t* index = static_cast<std::uint8_t*>(mem) + (h.index_position - map_off);
  for (std::uint64_t i = 0; i < slots; ++i) {
    std::memset(index + i * kIndexEntrySize, 0, kKeySize);
    store_be64(index + i * kIndexEntrySize + kKeySize, kNoObject);
  }
  std::optional<Error> problem;
  for (const Record& r : records_) {
    const cmph_uint32 slot = cmph_search(hash, reinterpret_cast<const char*>(r.key.data()), kKeySize);
    std::uint8_t* e = index + std::uint64_t(slot) * kIndexEntrySize;
    if (slot >= slots || load_be64(e + kKeySize) != kNoObject) {
      problem = err("swh.cmph", r.offset, "perfect hash is not injective");
      break;
    }
    std::memcpy(e, r.key.data(), kKeySize);
    store_be64(e + kKeySize, r.offset);
  }
  const bool synced = ::msync(mem, map_len, MS_SYNC) == 0;
  ::munmap(mem, map_len);
  if (problem) return *problem;
  if (!synced) return err("swh.io", h.index_position, "cannot write the index: " + errno_text());

  // The function, as cmph_dump writes it.
  int dfd = ::dup(fd_);
  FILE* f = dfd < 0 ? nullptr : ::fdopen(dfd, "r+b");
  if (!f) {
    if (dfd >= 0) ::close(dfd);
    return err("swh.io", h.hash_position, "cannot open the file for cmph_dump: " + errno_text());
  }
  bool ok = ::fseeko(f, static_cast<off_t>(h.hash_position), SEEK_SET) == 0;
  ok = ok && cmph_dump(hash, f) != 0;
  ok = ::fflush(f) == 0 && ok;
  ok = ::fclose(f) == 0 && ok;
  if (!ok) return err("swh.io", h.hash_position, "cannot write the hash function: " + errno_text());

  std::uint8_t head[kHeaderSize];
  const std::uint64_t fields[7] = {h.version,        h.objects_count, h.objects_position, h.objects_size,
                                   h.index_position, h.index_size,    h.hash_position};
  for (int i = 0; i < 7; ++i) store_be64(head + 8 * i, fields[i]);
  if (!write_all(fd_, head, kHeaderSize, kHeaderOffset) ||
      !write_all(fd_, reinterpret_cast<const std::uint8_t*>(kMagic), kMagicWritten, 0)) {
    return err("swh.io", 0, "cannot write the header: " + errno_text());
  }
  if (::fdatasync(fd_) != 0 && errno != EINVAL && errno != EROFS) {
    return err("swh.io", 0, "fdatasync: " + errno_text());
  }
  if (::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    return err("swh.io", 0, "cannot rename onto " + path_ + ": " + errno_text());
  }
  finished_ = true;
  ::close(fd_);
  fd_ = -1;
  records_.clear();
  records_.shrink_to_fit();
  return h;
}

// ---- Reader ----------------------------------------------------------------

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
