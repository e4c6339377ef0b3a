// The keyed forms of many raw hashes at once (shard/keyed_many.cpp, sixteen
// BLAKE3 compressions in vector lanes): each lane equals the one-at-a-time
// keyed hash, for every count around the lane width, and nothing past the
// end is written.
#include <gtest/gtest.h>

#include <span>
#include <vector>

#include "shard/keys.hpp"

namespace dedupd::shard {
namespace {

TEST(KeyedChunkHasher, ManyAtOnceEqualOneByOne) {
  // Every count around the sixteen lanes, every lane against BLAKE3's own
  // hasher, under several keys and the zero key.
  std::vector<Hash> raw;
  Hash h = chunk_hash_of_data(std::vector<std::uint8_t>{7});
  for (int i = 0; i < 70; ++i) raw.push_back(h = chunk_hash_of_data(h.bytes));
  for (int k = 0; k < 4; ++k) {
    const Key key = k == 3 ? Key{} : chunk_hash_of_data(std::vector<std::uint8_t>{std::uint8_t(k), 2});
    KeyedChunkHasher hasher(key);
    for (std::size_t n : {0, 1, 15, 16, 17, 31, 32, 33, 70}) {
      std::vector<Hash> out(n + 1);
      out[n].bytes.fill(0xEE);  // past the end: untouched
      hasher.hash_many(std::span(raw.data(), n), out.data());
      for (std::size_t i = 0; i < n; ++i)
        ASSERT_EQ(out[i], key.is_zero() ? raw[i] : blake3_keyed(key, raw[i].bytes)) << k << " " << n << " " << i;
      Hash untouched;
      untouched.bytes.fill(0xEE);
      EXPECT_EQ(out[n], untouched);
    }
  }
}

}  // namespace
}  // namespace dedupd::shard
