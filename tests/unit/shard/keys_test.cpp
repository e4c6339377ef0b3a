// Keyed hashes, xorb and file hashes against published reference values.
#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "shard/keys.hpp"

namespace dedupd::shard {
namespace {

struct Leaf {
  const char* hash;
  std::uint64_t size;
};
struct SaltedFileHash {
  const char* salt;
  const char* file_hash;
};
struct ReferenceVector {
  std::vector<Leaf> leaves;
  const char* xorb;
  std::array<SaltedFileHash, 3> files;
};

const std::vector<ReferenceVector> kReference = {
#include "xet_core_aggregated_vectors.inc"
};

Hash H(const char* s) {
  auto h = Hash::parse(s);
  EXPECT_TRUE(h.ok()) << s;
  return h ? *h : Hash{};
}

std::vector<HashAndSize> leaves_of(const ReferenceVector& v) {
  std::vector<HashAndSize> out;
  for (const auto& l : v.leaves) out.push_back({H(l.hash), l.size});
  return out;
}

TEST(XetCoreReference, AllEighteenVectorsArePresent) { EXPECT_EQ(kReference.size(), 18u); }

TEST(XetCoreReference, XorbHashes) {
  for (std::size_t i = 0; i < kReference.size(); ++i)
    EXPECT_EQ(xorb_hash(leaves_of(kReference[i])).to_string(), kReference[i].xorb) << "vector " << i;
}

TEST(XetCoreReference, UnsaltedFileHashes) {
  for (std::size_t i = 0; i < kReference.size(); ++i) {
    ASSERT_TRUE(H(kReference[i].files[0].salt).is_zero());
    EXPECT_EQ(file_hash(leaves_of(kReference[i])).to_string(), kReference[i].files[0].file_hash) << "vector " << i;
  }
}

// A salted file hash is the keyed hash of the root under the salt; checking
// it pins down which bytes of the root feed the final keyed hash.
TEST(XetCoreReference, SaltedFileHashes) {
  for (std::size_t i = 0; i < kReference.size(); ++i) {
    if (kReference[i].leaves.empty()) continue;  // empty file: zero whatever the salt
    Hash root = xorb_hash(leaves_of(kReference[i]));
    for (std::size_t s = 1; s < 3; ++s)
      EXPECT_EQ(blake3_keyed(H(kReference[i].files[s].salt), root.bytes).to_string(), kReference[i].files[s].file_hash)
          << "vector " << i << " salt " << s;
  }
}

TEST(XorbHash, EmptyIsZeroAndOneChunkIsTheChunk) {
  EXPECT_TRUE(xorb_hash({}).is_zero());
  EXPECT_TRUE(file_hash({}).is_zero());
  Hash c = chunk_hash_of_data(std::vector<std::uint8_t>{1, 2, 3});
  HashAndSize one[] = {{c, 3}};
  EXPECT_EQ(xorb_hash(one), c);
  EXPECT_NE(file_hash(one), c);
}

TEST(XorbHash, DependsOnSizesAndOrder) {
  Hash a = chunk_hash_of_data(std::vector<std::uint8_t>{1});
  Hash b = chunk_hash_of_data(std::vector<std::uint8_t>{2});
  HashAndSize ab[] = {{a, 1}, {b, 1}};
  HashAndSize ba[] = {{b, 1}, {a, 1}};
  HashAndSize ab2[] = {{a, 1}, {b, 2}};
  EXPECT_NE(xorb_hash(ab), xorb_hash(ba));
  EXPECT_NE(xorb_hash(ab), xorb_hash(ab2));
}

// The fixture's known answer (FORMAT-NOTES): a raw chunk hash keyed with the
// footer key gives the stored hash of xorb #1, chunk #0.
TEST(KeyedChunkHash, FixtureKnownAnswer) {
  Key key = H("d6834b04843aaf16f29903e2428a99be635099f9ea5056cc4e95e7ec8a41509f");
  Hash raw = H("9502eec19d4b0c9f7b389228fa801f68ecdf15d69ccd1da2f9ddbd0219898335");
  EXPECT_EQ(keyed_chunk_hash(key, raw).to_string(), "81b34a5179857460a1a5ba079fcf7231c307a19940ccb769e49240df5ec6c466");
}

TEST(KeyedChunkHash, ZeroKeyStoresRaw) {
  Hash raw = H("9502eec19d4b0c9f7b389228fa801f68ecdf15d69ccd1da2f9ddbd0219898335");
  EXPECT_EQ(keyed_chunk_hash(Key{}, raw), raw);
}

TEST(Keys, ConstantsMatchFormatNotes) {
  EXPECT_EQ(kDataKey.bytes[0], 102);
  EXPECT_EQ(kDataKey.bytes[31], 41);
  EXPECT_EQ(kInternalNodeKey.bytes[0], 1);
  EXPECT_EQ(kInternalNodeKey.bytes[31], 63);
  EXPECT_EQ(kVerificationKey.bytes[0], 127);
  EXPECT_EQ(kVerificationKey.bytes[31], 195);
}

TEST(VerificationRangeHash, IsKeyedHashOfConcatenatedRawHashes) {
  Hash a = chunk_hash_of_data(std::vector<std::uint8_t>{1});
  Hash b = chunk_hash_of_data(std::vector<std::uint8_t>{2});
  std::vector<std::uint8_t> concat(a.bytes.begin(), a.bytes.end());
  concat.insert(concat.end(), b.bytes.begin(), b.bytes.end());
  Hash pair[] = {a, b};
  EXPECT_EQ(verification_range_hash(pair), blake3_keyed(kVerificationKey, concat));
}

TEST(ShardFileHash, IsDataKeyedHashOfTheBytes) {
  std::vector<std::uint8_t> bytes{1, 2, 3, 4};
  EXPECT_EQ(shard_file_hash(bytes), blake3_keyed(kDataKey, bytes));
  EXPECT_EQ(shard_file_hash(bytes), chunk_hash_of_data(bytes));
}

TEST(KeyedChunkHasher, OneCompressionEqualsTheFullKeyedHash) {
  // Against BLAKE3's own hasher: many keys and messages, and the zero key
  // (stores raw).
  Hash raw = chunk_hash_of_data(std::vector<std::uint8_t>{9});
  for (int k = 0; k < 20; ++k) {
    Key key = chunk_hash_of_data(std::vector<std::uint8_t>{std::uint8_t(k), 1});
    KeyedChunkHasher hasher(key);
    for (int m = 0; m < 50; ++m) {
      raw = chunk_hash_of_data(raw.bytes);
      ASSERT_EQ(hasher(raw), keyed_chunk_hash(key, raw)) << k << " " << m;
      ASSERT_EQ(hasher(raw), blake3_keyed(key, raw.bytes));
    }
  }
  EXPECT_EQ(KeyedChunkHasher(Key{})(raw), raw);
}

}  // namespace
}  // namespace dedupd::shard
