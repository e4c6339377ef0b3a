#include "xetcache/shards.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace dedupd::xetcache {

ShardKind kind_of(const shard::ShardView& view) {
  if (view.keyed()) return ShardKind::keyed;
  // The reader accepted the shard, so every file's flag agrees with the first.
  auto files = view.files();
  if (files.empty()) return ShardKind::plain;
  return (*files.begin()).has_verification() ? ShardKind::verified : ShardKind::plain;
}

ShardDesc describe(const shard::ShardView& view, std::string path) {
  ShardDesc d;
  d.path = std::move(path);
  d.size = view.bytes().size();
  // The client reads the chunk table when it has entries and otherwise walks
  // the CAS section; for a shard the reader accepts both count every chunk.
  d.chunk_entries = view.stats().chunks;
  d.key = view.chunk_key();
  if (view.has_footer()) {
    d.creation = view.footer()->creation_timestamp;
    d.expiry = view.footer()->key_expiry;
  }
  d.kind = kind_of(view);
  const shard::ShardStats& st = view.stats();
  std::uint64_t entries =
      (view.cas_begin() - view.file_section_offset() - shard::kEntrySize) / shard::kEntrySize + st.xorbs + st.chunks;
  d.merged_bytes = shard::kEntrySize * entries + shard::kFileLookupEntrySize * st.files +
                   shard::kXorbLookupEntrySize * st.xorbs + shard::kChunkLookupEntrySize * st.chunks;
  return d;
}

Result<std::vector<std::uint8_t>> read_regular_file(const std::string& path) {
  auto fail = [&](const char* rule, const std::string& what) { return Error{rule, 0, path + ": " + what, false}; };
  // O_NONBLOCK: a FIFO swapped in must not hang the open; it is refused below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return fail("file.open", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return fail("file.read", std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail("xetcache.not_regular", "not a regular file");
  }
  std::vector<std::uint8_t> bytes(std::size_t(st.st_size));
  std::size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::pread(fd, bytes.data() + got, bytes.size() - got, off_t(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return fail("file.read", std::strerror(err));
    }
    if (n == 0) {
      ::close(fd);
      return fail("xetcache.truncated",
                  "shrank to " + std::to_string(got) + " of " + std::to_string(bytes.size()) + " bytes while read");
    }
    got += std::size_t(n);
  }
  ::close(fd);
  return bytes;
}

Result<ShardDesc> describe_file(const ShardFile& file) {
  auto bytes = read_regular_file(file.path);
  if (!bytes) return bytes.error();
  auto view = shard::ShardView::parse(*bytes);
  if (!view) {
    Error e = view.error();
    e.message = file.path + ": " + e.message;
    return e;
  }
  ShardDesc d = describe(*view, file.path);
  d.last_used = std::uint64_t(file.mtime_ns / 1'000'000'000);
  return d;
}

CacheUsage usage_of(std::span<const ShardDesc> shards) {
  CacheUsage u;
  for (const auto& s : shards) {
    ++u.files;
    u.bytes += s.size;
    u.chunk_entries += s.chunk_entries;
  }
  return u;
}

CacheScan scan(std::span<const ShardFile> files) {
  CacheScan out;
  for (const auto& f : files) {
    auto d = describe_file(f);
    if (d) out.shards.push_back(std::move(*d));
    else out.unreadable.push_back({f.path, d.error()});
  }
  out.usage = usage_of(out.shards);
  return out;
}

}  // namespace dedupd::xetcache
