// The MDB shard records byte by byte (shard/format): each field at the offset
// docs/FORMAT.md gives it, little-endian, read back as written; the bookend
// that ends a section and nothing that merely looks like it.
#include "shard/format.hpp"

#include <gtest/gtest.h>

#include <array>
#include <vector>

namespace dedupd::shard {
namespace {

Hash hash_filled(std::uint8_t from) {
  Hash h;
  for (std::size_t i = 0; i < h.bytes.size(); ++i) h.bytes[i] = std::uint8_t(from + i);
  return h;
}

// Little-endian `n` bytes at `at`.
std::uint64_t le(const std::vector<std::uint8_t>& b, std::size_t at, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = v << 8 | b[at + std::size_t(i)];
  return v;
}

Hash hash_at(const std::vector<std::uint8_t>& b, std::size_t at) {
  Hash h;
  std::copy(b.begin() + std::ptrdiff_t(at), b.begin() + std::ptrdiff_t(at + 32), h.bytes.begin());
  return h;
}

TEST(Format, TheFooterHasEveryFieldAtItsOffset) {
  ShardFooter f;
  f.file_info_offset = 0x0102030405060708;
  f.cas_info_offset = 11;
  f.file_lookup_offset = 12;
  f.file_lookup_num_entry = 13;
  f.xorb_lookup_offset = 14;
  f.xorb_lookup_num_entry = 15;
  f.chunk_lookup_offset = 16;
  f.chunk_lookup_num_entry = 17;
  f.chunk_hash_key = hash_filled(0x40);
  f.creation_timestamp = 1754059905;
  f.key_expiry = kNoExpiry;
  for (int i = 0; i < 6; ++i) f.reserved[i] = 100 + std::uint64_t(i);
  f.stored_bytes_on_disk = 21;
  f.materialized_bytes = 22;
  f.stored_bytes = 23;
  f.footer_offset = 0xAABBCCDD;
  std::vector<std::uint8_t> b(kFooterSize, 0xEE);
  f.encode(b.data());
  EXPECT_EQ(le(b, 0, 8), kFooterVersion);
  EXPECT_EQ(b[8], 0x08) << "little-endian";
  EXPECT_EQ(b[15], 0x01);
  EXPECT_EQ(le(b, 16, 8), 11u);
  EXPECT_EQ(le(b, 64, 8), 17u);
  EXPECT_EQ(hash_at(b, 72), hash_filled(0x40));
  EXPECT_EQ(le(b, 104, 8), 1754059905u);
  EXPECT_EQ(le(b, 112, 8), kNoExpiry);
  EXPECT_EQ(le(b, 120, 8), 100u);
  EXPECT_EQ(le(b, 160, 8), 105u);
  EXPECT_EQ(le(b, 168, 8), 21u);
  EXPECT_EQ(le(b, 192, 8), 0xAABBCCDDu);

  const ShardFooter d = ShardFooter::decode(b.data());
  EXPECT_EQ(d.version, kFooterVersion);
  EXPECT_EQ(d.file_info_offset, f.file_info_offset);
  EXPECT_EQ(d.cas_info_offset, 11u);
  EXPECT_EQ(d.file_lookup_offset, 12u);
  EXPECT_EQ(d.file_lookup_num_entry, 13u);
  EXPECT_EQ(d.xorb_lookup_offset, 14u);
  EXPECT_EQ(d.xorb_lookup_num_entry, 15u);
  EXPECT_EQ(d.chunk_lookup_offset, 16u);
  EXPECT_EQ(d.chunk_lookup_num_entry, 17u);
  EXPECT_EQ(d.chunk_hash_key, f.chunk_hash_key);
  EXPECT_EQ(d.creation_timestamp, f.creation_timestamp);
  EXPECT_EQ(d.key_expiry, kNoExpiry);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(d.reserved[i], 100 + std::uint64_t(i));
  EXPECT_EQ(d.stored_bytes_on_disk, 21u);
  EXPECT_EQ(d.materialized_bytes, 22u);
  EXPECT_EQ(d.stored_bytes, 23u);
  EXPECT_EQ(d.footer_offset, 0xAABBCCDDu);
}

TEST(Format, FileRecordsAreAHashAndFourWords) {
  std::vector<std::uint8_t> b(kEntrySize, 0xEE);
  FileHeader{hash_filled(1), kFileFlagWithVerification | kFileFlagWithMetadataExt, 3, 0x1122334455667788}.encode(
      b.data());
  EXPECT_EQ(hash_at(b, 0), hash_filled(1));
  EXPECT_EQ(le(b, 32, 4), 0xC0000000u);
  EXPECT_EQ(le(b, 36, 4), 3u);
  EXPECT_EQ(le(b, 40, 8), 0x1122334455667788u);
  const FileHeader h = FileHeader::decode(b.data());
  EXPECT_EQ(h.file_hash, hash_filled(1));
  EXPECT_EQ(h.flags, kFileFlagWithVerification | kFileFlagWithMetadataExt);
  EXPECT_EQ(h.num_entries, 3u);
  EXPECT_EQ(h.unused, 0x1122334455667788u);

  FileTerm{hash_filled(2), 5, 65536, 7, 9}.encode(b.data());
  EXPECT_EQ(hash_at(b, 0), hash_filled(2));
  EXPECT_EQ(le(b, 32, 4), 5u);
  EXPECT_EQ(le(b, 36, 4), 65536u);
  EXPECT_EQ(le(b, 40, 4), 7u);
  EXPECT_EQ(le(b, 44, 4), 9u);
  const FileTerm t = FileTerm::decode(b.data());
  EXPECT_EQ(t.xorb_hash, hash_filled(2));
  EXPECT_EQ(t.flags, 5u);
  EXPECT_EQ(t.unpacked_bytes, 65536u);
  EXPECT_EQ(t.chunk_start, 7u);
  EXPECT_EQ(t.chunk_end, 9u);

  HashRecord r;
  r.hash = hash_filled(3);
  r.unused[0] = 0x5A;
  r.unused[15] = 0xA5;
  r.encode(b.data());
  EXPECT_EQ(hash_at(b, 0), hash_filled(3));
  EXPECT_EQ(b[32], 0x5A);
  EXPECT_EQ(b[47], 0xA5);
  const HashRecord back = HashRecord::decode(b.data());
  EXPECT_EQ(back.hash, r.hash);
  EXPECT_EQ(back.unused, r.unused);
}

TEST(Format, XorbRecordsAreAHeaderAndItsChunks) {
  std::vector<std::uint8_t> b(kEntrySize, 0xEE);
  XorbHeader{hash_filled(4), 1, 2117, 64 << 20, 0x01020304}.encode(b.data());
  EXPECT_EQ(hash_at(b, 0), hash_filled(4));
  EXPECT_EQ(le(b, 32, 4), 1u);
  EXPECT_EQ(le(b, 36, 4), 2117u);
  EXPECT_EQ(le(b, 40, 4), std::uint64_t(64 << 20));
  EXPECT_EQ(b[44], 0x04);
  const XorbHeader x = XorbHeader::decode(b.data());
  EXPECT_EQ(x.xorb_hash, hash_filled(4));
  EXPECT_EQ(x.flags, 1u);
  EXPECT_EQ(x.num_entries, 2117u);
  EXPECT_EQ(x.bytes_in_xorb, std::uint32_t(64 << 20));
  EXPECT_EQ(x.bytes_on_disk, 0x01020304u);

  ChunkEntry{hash_filled(5), 4096, 8192, kChunkFlagGlobalDedupEligible, 77}.encode(b.data());
  EXPECT_EQ(hash_at(b, 0), hash_filled(5));
  EXPECT_EQ(le(b, 32, 4), 4096u);
  EXPECT_EQ(le(b, 36, 4), 8192u);
  EXPECT_EQ(le(b, 40, 4), 0x80000000u);
  EXPECT_EQ(le(b, 44, 4), 77u);
  const ChunkEntry c = ChunkEntry::decode(b.data());
  EXPECT_EQ(c.chunk_hash, hash_filled(5));
  EXPECT_EQ(c.byte_start, 4096u);
  EXPECT_EQ(c.unpacked_bytes, 8192u);
  EXPECT_EQ(c.flags, kChunkFlagGlobalDedupEligible);
  EXPECT_EQ(c.unused, 77u);
}

TEST(Format, TheBookendIsThirtyTwoOnesBytesThenSixteenZeros) {
  std::array<std::uint8_t, kEntrySize> e{};
  e.fill(0x33);
  write_bookend(e.data());
  for (std::size_t i = 0; i < 32; ++i) EXPECT_EQ(e[i], 0xFF) << i;
  for (std::size_t i = 32; i < 48; ++i) EXPECT_EQ(e[i], 0x00) << i;
  EXPECT_TRUE(is_bookend(e.data()));
  // Any byte different is a record, not the end of a section.
  for (std::size_t i : {std::size_t(0), std::size_t(31), std::size_t(32), std::size_t(47)}) {
    auto other = e;
    other[i] ^= 1;
    EXPECT_FALSE(is_bookend(other.data())) << i;
  }
  std::array<std::uint8_t, kEntrySize> zeros{};
  EXPECT_FALSE(is_bookend(zeros.data()));
}

}  // namespace
}  // namespace dedupd::shard
