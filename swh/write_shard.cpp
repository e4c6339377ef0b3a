#include "swh/write_shard.hpp"

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
#include <optional>
#include <string_view>
#include <utility>

#include "shard/bytes.hpp"
#include "swh/errors.hpp"

namespace dedupd::swh {
namespace {

using shard::load_be64;
using shard::store_be64;

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

}  // namespace

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

}  // namespace dedupd::swh
