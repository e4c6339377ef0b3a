#include "shard/keys.hpp"

#include <blake3.h>

#include <array>
#include <charconv>
#include <cstring>
#include <string>
#include <vector>

// BLAKE3's compression function, from the same C sources (blake3_impl.h
// declares it, but that header is not meant for C++). Runtime dispatch picks
// the SSE4.1/AVX-512 kernel as blake3_hasher does.
extern "C" void blake3_compress_in_place(std::uint32_t cv[8], const std::uint8_t block[64], std::uint8_t block_len,
                                         std::uint64_t counter, std::uint8_t flags);

namespace dedupd::shard {

namespace {
Key make_key(std::initializer_list<std::uint8_t> b) {
  Key k;
  std::copy(b.begin(), b.end(), k.bytes.begin());
  return k;
}

// Xet's branching rule: mean 4 children, at least 3 unless the tail is short,
// at most 9.
constexpr std::size_t kMeanBranching = 4;
constexpr std::size_t kMaxGroup = 2 * kMeanBranching + 1;

std::size_t next_cut(std::span<const HashAndSize> rest) {
  if (rest.size() <= 2) return rest.size();
  std::size_t end = std::min(kMaxGroup, rest.size());
  for (std::size_t i = 2; i < end; ++i)
    if (rest[i].hash.word(3) % kMeanBranching == 0) return i + 1;
  return end;
}

// Hash::to_string() into a buffer. A xorb of 8 Ki chunks takes ~2,700
// merges; building their text in std::strings was a sixth of the time the
// daemon's xorb hash check takes (the rest is BLAKE3).
constexpr std::array<std::array<char, 2>, 256> kHexPairs = [] {
  std::array<std::array<char, 2>, 256> t{};
  constexpr char kHex[] = "0123456789abcdef";
  for (int b = 0; b < 256; ++b) t[b] = {kHex[b >> 4], kHex[b & 0xF]};
  return t;
}();

char* put_hash(char* p, const Hash& h) {
  // Each 8-byte word as a little-endian u64: its last byte's digits first.
  for (int w = 0; w < 4; ++w)
    for (int b = 0; b < 8; ++b) std::memcpy(p + 16 * w + 2 * b, kHexPairs[h.bytes[8 * w + 7 - b]].data(), 2);
  return p + 64;
}

HashAndSize merge(std::span<const HashAndSize> group) {
  // "<hash> : <size>\n" per child, at most kMaxGroup children.
  char text[kMaxGroup * (64 + 3 + 20 + 1)];
  char* p = text;
  std::uint64_t total = 0;
  for (const auto& m : group) {
    p = put_hash(p, m.hash);
    *p++ = ' ', *p++ = ':', *p++ = ' ';
    p = std::to_chars(p, p + 20, m.size).ptr;
    *p++ = '\n';
    total += m.size;
  }
  auto bytes = std::span(reinterpret_cast<const std::uint8_t*>(text), std::size_t(p - text));
  return {blake3_keyed(kInternalNodeKey, bytes), total};
}
}  // namespace

const Key kDataKey = make_key({102, 151, 245, 119, 91,  149, 80, 222, 49,  53,  203, 172, 165, 151, 24,  28,
                               157, 228, 33,  16,  155, 235, 43, 88,  180, 208, 176, 75,  147, 173, 242, 41});
const Key kInternalNodeKey = make_key({1,  126, 197, 199, 165, 71,  41,  150, 253, 148, 102, 102, 180, 138, 2,   230,
                                       93, 221, 83,  111, 55,  199, 109, 210, 248, 99,  82,  230, 74,  83,  113, 63});
const Key kVerificationKey = make_key({127, 24,  87, 214, 206, 86,  237, 102, 18, 127, 249, 19,  231, 165, 195, 243,
                                       164, 205, 38, 213, 181, 219, 73,  230, 65, 36,  152, 127, 40,  251, 148, 195});

Hash blake3_keyed(const Key& key, std::span<const std::uint8_t> message) {
  blake3_hasher hasher;
  blake3_hasher_init_keyed(&hasher, key.bytes.data());
  blake3_hasher_update(&hasher, message.data(), message.size());
  Hash out;
  blake3_hasher_finalize(&hasher, out.bytes.data(), out.bytes.size());
  return out;
}

Hash keyed_chunk_hash(const Key& key, const Hash& raw) {
  if (key.is_zero()) return raw;
  return blake3_keyed(key, raw.bytes);
}

namespace {
// Domain flags of a compression, from the BLAKE3 specification (section 2.1).
constexpr std::uint8_t kChunkStart = 1 << 0, kChunkEnd = 1 << 1, kRoot = 1 << 3, kKeyedHash = 1 << 4;

std::uint32_t load_le32(const std::uint8_t* p) {
  return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 | std::uint32_t(p[3]) << 24;
}
}  // namespace

KeyedChunkHasher::KeyedChunkHasher(const Key& key) : key_(key) {
  for (int i = 0; i < 8; ++i) key_words_[i] = load_le32(key.bytes.data() + 4 * i);
}

Hash KeyedChunkHasher::operator()(const Hash& raw) const {
  if (key_.is_zero()) return raw;
  std::uint32_t cv[8];
  std::memcpy(cv, key_words_, sizeof cv);
  alignas(16) std::uint8_t block[64] = {};
  std::memcpy(block, raw.bytes.data(), 32);
  blake3_compress_in_place(cv, block, 32, 0, kChunkStart | kChunkEnd | kRoot | kKeyedHash);
  Hash out;
  for (int i = 0; i < 8; ++i)
    for (int b = 0; b < 4; ++b) out.bytes[4 * i + b] = std::uint8_t(cv[i] >> (8 * b));
  return out;
}

Hash chunk_hash_of_data(std::span<const std::uint8_t> data) { return blake3_keyed(kDataKey, data); }

Hash shard_file_hash(std::span<const std::uint8_t> file_bytes) { return blake3_keyed(kDataKey, file_bytes); }

Hash aggregated_node_hash(std::span<const HashAndSize> leaves) {
  if (leaves.empty()) return Hash{};
  std::vector<HashAndSize> level(leaves.begin(), leaves.end());
  while (level.size() > 1) {
    std::size_t write = 0;
    for (std::size_t read = 0; read < level.size();) {
      std::size_t cut = read + next_cut(std::span(level).subspan(read));
      level[write++] = merge(std::span(level).subspan(read, cut - read));
      read = cut;
    }
    level.resize(write);
  }
  return level[0].hash;
}

Hash file_hash(std::span<const HashAndSize> chunks) {
  if (chunks.empty()) return Hash{};
  return blake3_keyed(Key{}, aggregated_node_hash(chunks).bytes);
}

Hash verification_range_hash(std::span<const Hash> raw_chunk_hashes) {
  blake3_hasher hasher;
  blake3_hasher_init_keyed(&hasher, kVerificationKey.bytes.data());
  for (const auto& h : raw_chunk_hashes) blake3_hasher_update(&hasher, h.bytes.data(), 32);
  Hash out;
  blake3_hasher_finalize(&hasher, out.bytes.data(), out.bytes.size());
  return out;
}

}  // namespace dedupd::shard
