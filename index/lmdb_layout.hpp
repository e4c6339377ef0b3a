// LMDB 0.9's data file on 64-bit Linux (mdb.c, Debian 12's liblmdb0):
// facts of the format, not code, for the checks that read data.mdb
// without LMDB (file_check, page_check). A page: its number (8), pad (2,
// a LEAF2 page's key size), flags (2), then the lower and upper bounds of
// its free space (2 + 2; an overflow page's count of pages, 4), then a
// 2-byte offset per node. A tree's record (MDB_db): pad (4; the page size
// in the free list's), flags (2), depth (2), its branch, leaf and
// overflow pages, entries, root (8 each). Numbers in the host's order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace dedupd::index::lmdb_layout {

constexpr std::size_t kPageHeader = 16;
constexpr std::uint16_t kPageBranch = 0x01, kPageLeaf = 0x02, kPageOverflow = 0x04, kPageMeta = 0x08, kPageDirty = 0x10,
                        kPageLeaf2 = 0x20, kPageSub = 0x40;
constexpr std::size_t kDbRecord = 48, kDbPad = 0, kDbFlags = 4, kDbRoot = 40;
constexpr std::uint64_t kNoPage = ~std::uint64_t(0);

inline std::uint16_t u16(const std::uint8_t* p) {
  std::uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline std::uint32_t u32(const std::uint8_t* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline std::uint64_t u64(const std::uint8_t* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

}  // namespace dedupd::index::lmdb_layout
