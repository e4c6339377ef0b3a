// Software Heritage read shards: the swh-perfecthash test vector, a large
// export/lookup round trip with dedupd's location records, absent keys, and
// corrupted files (errors, never crashes).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "swh/location.hpp"
#include "swh/read_shard.hpp"
#include "swh/write_shard.hpp"
#include "test_support.hpp"
#include "tests/support/temp_dir.hpp"

namespace dedupd::swh {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

using tests::TempDir;

// Files in `dir`: a writer must leave no temporary behind.
std::size_t entries(const TempDir& dir) {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()));
}

Bytes read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::uint64_t be64(const Bytes& b, std::size_t at) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | b[at + i];
  return v;
}

// swh-perfecthash's vector: key i = i as a 32-byte big-endian integer
// (bytes.fromhex(f"{i:-064X}")), value = bytes((65 + i,)) * 42.
Key vector_key(unsigned i) {
  Key k{};
  k[31] = static_cast<std::uint8_t>(i);
  return k;
}
Bytes vector_value(unsigned i) { return Bytes(42, static_cast<std::uint8_t>(65 + i)); }

std::string write_vector(const TempDir& dir) {
  std::string path = dir / "small.shard";
  auto w = Writer::create(path);
  EXPECT_TRUE(w.ok());
  for (unsigned i = 0; i < 16; ++i) EXPECT_TRUE(w->add(vector_key(i), vector_value(i)).ok());
  auto h = w->finish();
  EXPECT_TRUE(h.ok()) << h.error().to_string();
  return path;
}

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

Location location_for(std::uint64_t i, std::uint32_t j) {
  Location l;
  l.xorb = shard::testing::seeded_hash(1'000'000'000 + i / 7);
  l.chunk_index = static_cast<std::uint32_t>(i % 1000 + j);
  l.byte_start = static_cast<std::uint32_t>(i * 3 + j);
  l.byte_end = l.byte_start + 65536 + j;
  l.unpacked_size = 131072 - j;
  return l;
}

std::vector<Location> locations_for(std::uint64_t i) {
  std::vector<Location> out;
  for (std::uint32_t j = 0; j < 1 + i % 3; ++j) out.push_back(location_for(i, j));
  return out;
}

Key key_of(const shard::Hash& h) {
  Key k;
  std::memcpy(k.data(), h.bytes.data(), 32);
  return k;
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

std::string open_rule(const Bytes& b) {
  auto r = Reader::from_bytes(b);
  return r.ok() ? "<ok>" : r.error().rule;
}

TEST(SwhShard, HeaderCorruptionsAreErrors) {
  TempDir dir;
  const Bytes good = read_all(write_vector(dir));
  ASSERT_EQ(open_rule(good), "<ok>");
  EXPECT_EQ(open_rule(Bytes(good.begin(), good.begin() + 87)), "swh.truncated");
  EXPECT_EQ(open_rule(Bytes{}), "swh.truncated");
  Bytes b = good;
  b[3] = 'x';
  EXPECT_EQ(open_rule(b), "swh.magic");
  b = good;
  b[8] = 'x';  // the NUL is part of the magic
  EXPECT_EQ(open_rule(b), "swh.magic");
  b = good;
  b[39] = 2;
  EXPECT_EQ(open_rule(b), "swh.version");
  for (std::size_t field = 1; field < 7; ++field) {
    b = good;
    b[32 + 8 * field] ^= 0x80;  // huge value
    EXPECT_NE(open_rule(b), "<ok>") << "field " << field;
    b = good;
    b[32 + 8 * field + 7] ^= 0x08;  // small shift
    EXPECT_NE(open_rule(b), "<ok>") << "field " << field;
  }
  // Cut anywhere in the dump.
  for (std::size_t n = 1992; n < good.size(); ++n) {
    EXPECT_EQ(open_rule(Bytes(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n))), "swh.hash") << n;
  }
}

// The original's own corruption test (test_shard.py test_lookup_failure):
// an object size larger than the file is an error on lookup.
TEST(SwhShard, CorruptObjectSizeIsAnErrorOnLookup) {
  TempDir dir;
  Bytes b = read_all(write_vector(dir));
  const Bytes patch = {0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
  std::copy(patch.begin(), patch.end(), b.begin() + 512);
  auto r = Reader::from_bytes(b);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  auto got = r->lookup(vector_key(0));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().rule, "swh.object");
  EXPECT_EQ(got.error().offset, 512u);
  auto other = r->lookup(vector_key(1));
  ASSERT_TRUE(other.ok() && other->has_value());
}

TEST(SwhShard, MismatchedAndDeletedKeysAreAbsent) {
  TempDir dir;
  Bytes b = read_all(write_vector(dir));
  auto r0 = Reader::from_bytes(b);
  ASSERT_TRUE(r0.ok());
  const std::uint64_t slot3 = r0->slot_of(vector_key(3));
  const std::uint64_t slot5 = r0->slot_of(vector_key(5));
  // Slot of key 3 now claims another key; slot of key 5 is a tombstone.
  b[1312 + 40 * slot3 + 31] = 0x77;
  std::fill(b.begin() + 1312 + 40 * slot5, b.begin() + 1312 + 40 * slot5 + 32, 0);
  std::fill(b.begin() + 1312 + 40 * slot5 + 32, b.begin() + 1312 + 40 * slot5 + 40, 0xFF);
  // An offset pointing outside the objects section.
  const std::uint64_t slot7 = r0->slot_of(vector_key(7));
  std::fill(b.begin() + 1312 + 40 * slot7 + 32, b.begin() + 1312 + 40 * slot7 + 40, 0x00);
  auto r = Reader::from_bytes(b);
  ASSERT_TRUE(r.ok());
  auto g3 = r->lookup(vector_key(3));
  ASSERT_TRUE(g3.ok());
  EXPECT_FALSE(g3->has_value());
  auto g5 = r->lookup(vector_key(5));
  ASSERT_TRUE(g5.ok());
  EXPECT_FALSE(g5->has_value());
  auto g7 = r->lookup(vector_key(7));
  ASSERT_FALSE(g7.ok());
  EXPECT_EQ(g7.error().rule, "swh.object");
  auto g4 = r->lookup(vector_key(4));
  ASSERT_TRUE(g4.ok() && g4->has_value());
}

// Every single-byte change and random multi-byte damage in the whole file:
// open and lookups return values or errors, never crash (run under ASan in
// the sanitizer build to make this bite).
TEST(SwhShard, RandomCorruptionNeverCrashes) {
  TempDir dir;
  const Bytes good = read_all(write_vector(dir));
  std::mt19937_64 rng(42);
  auto exercise = [](const Bytes& b) {
    auto r = Reader::from_bytes(b);
    if (!r.ok()) return;
    for (unsigned i = 0; i < 17; ++i) (void)r->lookup(vector_key(i));
    for (std::uint64_t s = 0; s < r->slots(); ++s) (void)r->entry(s);
  };
  for (std::size_t at = 0; at < good.size(); ++at) {
    for (std::uint8_t x : {std::uint8_t(0x01), std::uint8_t(0x80), std::uint8_t(0xFF)}) {
      Bytes b = good;
      b[at] ^= x;
      exercise(b);
    }
  }
  for (int round = 0; round < 2000; ++round) {
    Bytes b = good;
    const int hits = 1 + static_cast<int>(rng() % 8);
    for (int k = 0; k < hits; ++k) b[1992 + rng() % (good.size() - 1992)] = static_cast<std::uint8_t>(rng());
    exercise(b);
  }
}

TEST(SwhLocation, RoundTripAndLayout) {
  std::vector<Location> locs = {location_for(5, 0), location_for(5, 1)};
  Bytes enc = encode_locations(locs);
  ASSERT_EQ(enc.size(), 4u + 48u * 2);
  EXPECT_EQ(Bytes(enc.begin(), enc.begin() + 4), (Bytes{0, 0, 0, 2}));  // BE count
  EXPECT_EQ(Bytes(enc.begin() + 4, enc.begin() + 36), Bytes(locs[0].xorb.bytes.begin(), locs[0].xorb.bytes.end()));
  const std::uint32_t ci = locs[0].chunk_index;
  EXPECT_EQ(enc[36], ci >> 24);
  EXPECT_EQ(enc[39], ci & 0xFF);
  auto dec = decode_locations(enc);
  ASSERT_TRUE(dec.ok());
  EXPECT_EQ(*dec, locs);
}

TEST(SwhLocation, Rejects) {
  Bytes enc = encode_locations(std::vector<Location>{location_for(1, 0)});
  EXPECT_EQ(decode_locations(Bytes{0, 0}).error().rule, "location.size");
  EXPECT_EQ(decode_locations(Bytes{0, 0, 0, 0}).error().rule, "location.count");
  Bytes shorter(enc.begin(), enc.end() - 1);
  EXPECT_EQ(decode_locations(shorter).error().rule, "location.size");
  Bytes more = enc;
  more[3] = 2;
  EXPECT_EQ(decode_locations(more).error().rule, "location.size");
  Bytes inverted = enc;
  inverted[40] = 0xFF;  // byte start > byte end
  EXPECT_EQ(decode_locations(inverted).error().rule, "location.range");
}

}  // namespace
}  // namespace dedupd::swh
