#include "xetcache/shards.hpp"

#include <utility>

#include "shard/mapped_file.hpp"

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

Result<ShardDesc> describe_file(const ShardFile& file) {
  auto mapped = shard::MappedFile::open(file.path);
  if (!mapped) return mapped.error();
  auto view = shard::ShardView::parse(mapped->bytes());
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
