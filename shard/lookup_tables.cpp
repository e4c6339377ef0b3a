#include "shard/lookup_tables.hpp"

#include <algorithm>
#include <tuple>

#include "shard/reader.hpp"

namespace dedupd::shard {

bool lookup_less(const LookupEntry& a, const LookupEntry& b) {
  return std::tie(a.truncated, a.index) < std::tie(b.truncated, b.index);
}
bool lookup_less(const ChunkLookupEntry& a, const ChunkLookupEntry& b) {
  return std::tie(a.truncated, a.xorb_index, a.chunk_offset) < std::tie(b.truncated, b.xorb_index, b.chunk_offset);
}
bool lookup_equal(const LookupEntry& a, const LookupEntry& b) {
  return a.truncated == b.truncated && a.index == b.index;
}
bool lookup_equal(const ChunkLookupEntry& a, const ChunkLookupEntry& b) {
  return a.truncated == b.truncated && a.xorb_index == b.xorb_index && a.chunk_offset == b.chunk_offset;
}

void sort_lookup_tables(LookupTableSet& t) {
  auto less = [](const auto& a, const auto& b) { return lookup_less(a, b); };
  std::sort(t.files.begin(), t.files.end(), less);
  std::sort(t.xorbs.begin(), t.xorbs.end(), less);
  std::sort(t.chunks.begin(), t.chunks.end(), less);
}

LookupTableSet canonical_lookup_tables(const ShardView& view, bool chunks) {
  LookupTableSet t;
  t.files.reserve(view.stats().files);
  t.xorbs.reserve(view.stats().xorbs);
  if (chunks) t.chunks.reserve(view.stats().chunks);
  // The reader guarantees both sections fit the file, so entry indices of an
  // accepted shard below 4 GiB of entries fit the u32 the tables store.
  for (FileBlock f : view.files())
    t.files.push_back({f.hash().truncated(), std::uint32_t((f.offset() - view.file_section_offset()) / kEntrySize)});
  for (XorbBlock x : view.xorbs()) {
    auto index = std::uint32_t((x.offset() - view.cas_begin()) / kEntrySize);
    t.xorbs.push_back({x.hash().truncated(), index});
    for (std::uint32_t i = 0; chunks && i < x.num_chunks(); ++i)
      t.chunks.push_back({load_u64(x.chunk_hash_bytes(i)), index, i});
  }
  sort_lookup_tables(t);
  return t;
}

}  // namespace dedupd::shard
