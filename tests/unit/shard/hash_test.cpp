// The Xet string form of hashes: print, parse, and why parsing fails.
#include <gtest/gtest.h>

#include "shard/hash.hpp"

namespace dedupd::shard {
namespace {

Hash counting_bytes() {
  Hash h;
  for (int i = 0; i < 32; ++i) h.bytes[i] = std::uint8_t(i);
  return h;
}

TEST(HashString, PrintsEachWordAsLittleEndianU64) {
  EXPECT_EQ(counting_bytes().to_string(),
            "0706050403020100"
            "0f0e0d0c0b0a0908"
            "1716151413121110"
            "1f1e1d1c1b1a1918");
}

TEST(HashString, ByteOrderHexIsPlain) {
  EXPECT_EQ(counting_bytes().to_hex_bytes(), "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
}

TEST(HashString, ParseIsTheInverse) {
  auto h = Hash::parse(counting_bytes().to_string());
  ASSERT_TRUE(h.ok()) << h.error().to_string();
  EXPECT_EQ(*h, counting_bytes());
  auto b = Hash::parse_hex_bytes(counting_bytes().to_hex_bytes());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, counting_bytes());
}

TEST(HashString, ParseAcceptsUppercase) {
  auto h = Hash::parse(
      "0706050403020100"
      "0F0E0D0C0B0A0908"
      "1716151413121110"
      "1F1E1D1C1B1A1918");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(*h, counting_bytes());
}

// The footer key of the fixture, as xet-core's own endianness test prints it.
TEST(HashString, FixtureKeyBytes) {
  const std::uint8_t raw[32] = {22,  175, 58, 132, 4,   75,  131, 214, 190, 153, 138, 66,  226, 3,   153, 242,
                                204, 86,  80, 234, 249, 153, 80,  99,  159, 80,  65,  138, 236, 231, 149, 78};
  EXPECT_EQ(Hash::from_bytes(raw).to_string(), "d6834b04843aaf16f29903e2428a99be635099f9ea5056cc4e95e7ec8a41509f");
}

TEST(HashString, RandomRoundTrips) {
  Hash h;
  std::uint64_t x = 0x9e3779b97f4a7c15;
  for (int round = 0; round < 100; ++round) {
    for (auto& b : h.bytes) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      b = std::uint8_t(x);
    }
    auto back = Hash::parse(h.to_string());
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, h);
  }
}

TEST(HashParse, WrongLengthSaysSo) {
  for (const std::string& text : {std::string(), std::string(63, '0'), std::string(65, '0')}) {
    auto h = Hash::parse(text);
    ASSERT_FALSE(h.ok());
    EXPECT_EQ(h.error().rule, "hash.length");
    EXPECT_NE(h.error().message.find(std::to_string(text.size())), std::string::npos);
    EXPECT_FALSE(Hash::parse_hex_bytes(text).ok());
  }
}

TEST(HashParse, BadDigitNamesItAndItsPosition) {
  for (std::size_t pos : {0u, 17u, 63u})
    for (char bad : {'g', ' ', 'x', '-'}) {
      std::string text(64, 'a');
      text[pos] = bad;
      auto h = Hash::parse(text);
      ASSERT_FALSE(h.ok());
      EXPECT_EQ(h.error().rule, "hash.digit");
      EXPECT_EQ(h.error().offset, pos);
      EXPECT_NE(h.error().message.find(bad), std::string::npos);
      EXPECT_EQ(Hash::parse_hex_bytes(text).error().rule, "hash.digit");
    }
}

TEST(Hash, TruncatedKeyIsTheFirstWord) {
  EXPECT_EQ(counting_bytes().truncated(), 0x0706050403020100u);
  EXPECT_EQ(counting_bytes().word(3), 0x1f1e1d1c1b1a1918u);
}

TEST(Hash, ZeroAndOrdering) {
  EXPECT_TRUE(Hash{}.is_zero());
  EXPECT_FALSE(counting_bytes().is_zero());
  EXPECT_LT(Hash{}, counting_bytes());
}

}  // namespace
}  // namespace dedupd::shard
