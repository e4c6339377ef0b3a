// Writing Software Heritage read shards (swh/write_shard): the swh-perfecthash
// test vector, byte identity with the original, a large export/lookup round
// trip with dedupd's location records, and the writer's refusals.
#include <gtest/gtest.h>

#include "swh_support.hpp"

namespace dedupd::swh {
namespace {

using namespace testing;
using tests::TempDir;

// Expected numbers from SoftwareHeritage/swh-perfecthash,
// src/swh/shard/tests/test_cli.py: test_cli_info (version 1, objects 16,
// position 512, size 800, index position 1312, size 680, hash position 1992,
// end 2070 = last byte) and test_cli_truncate ("New size is 2071").
TEST(SwhShard, SwhPerfecthashTestVector) {
  TempDir dir;
  std::string path = write_vector(dir);
  Bytes file = read_all(path);

  // Magic area: 9 bytes written, the rest zero.
  ASSERT_GE(file.size(), 512u);
  EXPECT_EQ(std::memcmp(file.data(), "SWHShard\0", 9), 0);
  for (std::size_t i = 9; i < 32; ++i) EXPECT_EQ(file[i], 0) << i;
  // Header: seven big-endian u64.
  EXPECT_EQ(be64(file, 32), 1u);
  EXPECT_EQ(be64(file, 40), 16u);
  EXPECT_EQ(be64(file, 48), 512u);
  EXPECT_EQ(be64(file, 56), 800u);
  EXPECT_EQ(be64(file, 64), 1312u);
  EXPECT_EQ(be64(file, 72), 680u);
  EXPECT_EQ(be64(file, 80), 1992u);
  for (std::size_t i = 88; i < 512; ++i) EXPECT_EQ(file[i], 0) << i;
  EXPECT_EQ(file.size(), 2071u);
  // Objects in insertion order: u64 BE size + bytes.
  for (unsigned i = 0; i < 16; ++i) {
    std::size_t at = 512 + 50 * i;
    EXPECT_EQ(be64(file, at), 42u);
    EXPECT_EQ(Bytes(file.begin() + at + 8, file.begin() + at + 50), vector_value(i));
  }
  // Index: 17 slots, 16 used; the empty one is a zero key + UINT64_MAX.
  std::size_t empty = 0;
  for (std::size_t s = 0; s < 17; ++s) {
    std::uint64_t off = be64(file, 1312 + 40 * s + 32);
    if (off == UINT64_MAX) {
      ++empty;
      for (std::size_t k = 0; k < 32; ++k) EXPECT_EQ(file[1312 + 40 * s + k], 0);
    } else {
      EXPECT_GE(off, 512u);
      EXPECT_LT(off, 1312u);
      EXPECT_EQ((off - 512) % 50, 0u);
      EXPECT_EQ(file[1312 + 40 * s + 31], (off - 512) / 50);  // the key is the object's
    }
  }
  EXPECT_EQ(empty, 1u);
  // The dump: cmph's chd_ph.
  EXPECT_EQ(std::memcmp(file.data() + 1992, "chd_ph\0", 7), 0);

  auto r = Reader::open(path);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  const Header& h = r->header();
  EXPECT_EQ(h.version, 1u);
  EXPECT_EQ(h.objects_count, 16u);
  EXPECT_EQ(h.objects_position, 512u);
  EXPECT_EQ(h.objects_size, 800u);
  EXPECT_EQ(h.index_position, 1312u);
  EXPECT_EQ(h.index_size, 680u);
  EXPECT_EQ(h.hash_position, 1992u);
  EXPECT_EQ(r->content_end() - 1, 2070u);  // the original's "end"
  EXPECT_EQ(r->slots(), 17u);
  for (unsigned i = 0; i < 16; ++i) {
    auto got = r->lookup(vector_key(i));
    ASSERT_TRUE(got.ok()) << got.error().to_string();
    ASSERT_TRUE(got->has_value()) << "key " << i;
    EXPECT_EQ(Bytes((*got)->begin(), (*got)->end()), vector_value(i));
  }
  Key absent{};
  absent[31] = 16;
  auto miss = r->lookup(absent);
  ASSERT_TRUE(miss.ok());
  EXPECT_FALSE(miss->has_value());
  absent.fill(0xAB);
  miss = r->lookup(absent);
  ASSERT_TRUE(miss.ok());
  EXPECT_FALSE(miss->has_value());
}

// Interop with the original C implementation: its output for the vector
// (tests/unit/formats/data/README.md) reads back here, and ours is the same
// file byte for byte once cmph draws the same seeds (glibc's default rand()
// state is srand(1)).
TEST(SwhShard, ByteIdenticalToTheOriginalImplementation) {
  const Bytes original = read_all(std::string(DEDUPD_FORMATS_DATA_DIR) + "/swh-perfecthash-16.shard");
  ASSERT_EQ(original.size(), 2071u);
  auto r = Reader::from_bytes(original);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  for (unsigned i = 0; i < 16; ++i) {
    auto got = r->lookup(vector_key(i));
    ASSERT_TRUE(got.ok() && got->has_value()) << i;
    EXPECT_EQ(Bytes((*got)->begin(), (*got)->end()), vector_value(i));
  }
  TempDir dir;
  ::srand(1);
  EXPECT_EQ(read_all(write_vector(dir)), original);
}

TEST(SwhShard, ExportThenLookupEveryKeyOf100k) {
  TempDir dir;
  const std::string path = dir / "export.shard";
  constexpr std::uint64_t kCount = 100'000;
  {
    auto w = Writer::create(path);
    ASSERT_TRUE(w.ok()) << w.error().to_string();
    for (std::uint64_t i = 0; i < kCount; ++i) {
      auto locs = locations_for(i);
      ASSERT_TRUE(w->add(key_of(shard::testing::seeded_hash(i)), encode_locations(locs)).ok());
    }
    EXPECT_EQ(w->count(), kCount);
    auto h = w->finish();
    ASSERT_TRUE(h.ok()) << h.error().to_string();
    EXPECT_EQ(h->objects_count, kCount);
    EXPECT_EQ(h->objects_position, 512u);
    EXPECT_EQ(h->index_position, h->objects_position + h->objects_size);
    EXPECT_EQ(h->hash_position, h->index_position + h->index_size);
    // cmph CHD_PH at load factor 0.99: the next prime above m / 0.99.
    EXPECT_EQ(h->index_size / 40, 101'021u);
  }
  EXPECT_EQ(entries(dir), 1u);  // no temporary left behind

  auto r = Reader::open(path);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  for (std::uint64_t i = 0; i < kCount; ++i) {
    auto got = r->lookup(key_of(shard::testing::seeded_hash(i)));
    ASSERT_TRUE(got.ok()) << got.error().to_string();
    ASSERT_TRUE(got->has_value()) << "key " << i;
    auto locs = decode_locations(**got);
    ASSERT_TRUE(locs.ok()) << locs.error().to_string();
    ASSERT_EQ(*locs, locations_for(i)) << "key " << i;
  }
  for (std::uint64_t i = kCount; i < kCount + 20'000; ++i) {
    auto got = r->lookup(key_of(shard::testing::seeded_hash(i)));
    ASSERT_TRUE(got.ok());
    EXPECT_FALSE(got->has_value()) << "absent key " << i << " found";
  }
  // Every used slot holds a key that hashes to it.
  std::uint64_t used = 0;
  for (std::uint64_t s = 0; s < r->slots(); ++s) {
    IndexEntry e = r->entry(s);
    if (e.empty()) continue;
    ++used;
    EXPECT_EQ(r->slot_of(e.key), s);
  }
  EXPECT_EQ(used, kCount);
}

TEST(SwhShard, DuplicateKeyFailsAndLeavesNothing) {
  TempDir dir;
  {
    auto w = Writer::create(dir / "dup.shard");
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w->add(vector_key(1), vector_value(1)).ok());
    ASSERT_TRUE(w->add(vector_key(1), vector_value(2)).ok());
    auto h = w->finish();
    ASSERT_FALSE(h.ok());
    EXPECT_EQ(h.error().rule, "swh.duplicate");
  }
  EXPECT_EQ(entries(dir), 0u);
}

TEST(SwhShard, ZeroKeysIsAnError) {
  TempDir dir;
  auto w = Writer::create(dir / "empty.shard");
  ASSERT_TRUE(w.ok());
  auto h = w->finish();
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.error().rule, "swh.cmph");
}

TEST(SwhShard, OneKey) {
  TempDir dir;
  std::string path = dir / "one.shard";
  auto w = Writer::create(path);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(w->add(vector_key(0), vector_value(0)).ok());
  ASSERT_TRUE(w->finish().ok());
  auto r = Reader::open(path);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  auto got = r->lookup(vector_key(0));
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ(Bytes((*got)->begin(), (*got)->end()), vector_value(0));
}

TEST(SwhShard, EmptyAndLargeObjectsAroundTheWriteBuffer) {
  TempDir dir;
  std::string path = dir / "mixed.shard";
  const std::vector<std::size_t> sizes = {0, 1, (1u << 20) - 8, 3u << 20, 100, 0, (1u << 20) + 1, 7};
  auto value = [](std::size_t i, std::size_t n) {
    Bytes v(n);
    for (std::size_t k = 0; k < n; ++k) v[k] = static_cast<std::uint8_t>(k * 31 + i);
    return v;
  };
  {
    auto w = Writer::create(path);
    ASSERT_TRUE(w.ok());
    std::uint64_t expect_at = 512;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      auto at = w->add(vector_key(static_cast<unsigned>(i)), value(i, sizes[i]));
      ASSERT_TRUE(at.ok());
      EXPECT_EQ(*at, expect_at);
      expect_at += 8 + sizes[i];
    }
    auto h = w->finish();
    ASSERT_TRUE(h.ok()) << h.error().to_string();
    EXPECT_EQ(h->index_position, expect_at);
  }
  auto r = Reader::open(path);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    auto got = r->lookup(vector_key(static_cast<unsigned>(i)));
    ASSERT_TRUE(got.ok() && got->has_value()) << i;
    EXPECT_EQ(Bytes((*got)->begin(), (*got)->end()), value(i, sizes[i])) << i;
  }
}

}  // namespace
}  // namespace dedupd::swh
