// Reading Software Heritage read shards (swh/read_shard): absent keys and
// corrupted files (errors, never crashes).
#include <gtest/gtest.h>

#include "swh_support.hpp"

namespace dedupd::swh {
namespace {

using namespace testing;
using tests::TempDir;

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

}  // namespace
}  // namespace dedupd::swh
