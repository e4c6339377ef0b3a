// KeyedChunkHasher::hash_many: the keyed forms of many raw hashes under one
// key, sixteen at a time. Each is one BLAKE3 compression (keys.hpp); done
// one by one, a lookup under four keys spends a fifth of its time there.
// Here lane j of each vector belongs to hash j, so one pass of the
// compression function hashes sixteen. The constants are BLAKE3's (the
// specification, section 2.2: IV, the message schedule and the G function);
// the unit test checks every lane against the one-at-a-time compression.
//
// GCC's vector extension keeps this portable; the body is built for
// AVX-512 and AVX2 besides the baseline, and the first call picks one.
// Not target_clones: its ifunc resolver runs while the program is being
// relocated, before a sanitizer's runtime is up, and crashes TSan builds.
#include <cstring>

#include "shard/keys.hpp"

namespace dedupd::shard {

namespace {

constexpr int kLanes = 16;
using Lanes = std::uint32_t __attribute__((vector_size(4 * kLanes)));

constexpr std::uint32_t kIv[4] = {0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A};
constexpr std::uint8_t kSchedule[7][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8},
    {3, 4, 10, 12, 13, 2, 7, 14, 6, 5, 9, 0, 11, 15, 8, 1}, {10, 7, 12, 9, 14, 3, 13, 15, 4, 0, 11, 2, 5, 8, 1, 6},
    {12, 13, 9, 11, 15, 10, 14, 8, 7, 2, 5, 3, 0, 1, 6, 4}, {9, 14, 11, 5, 8, 12, 15, 1, 13, 3, 0, 10, 2, 6, 4, 7},
    {11, 15, 5, 0, 1, 9, 8, 6, 14, 10, 2, 12, 3, 4, 7, 13},
};
// A 32-byte message that is its chunk's only block and the root, keyed.
constexpr std::uint32_t kBlockLen = 32;
constexpr std::uint32_t kFlags = (1 << 0) | (1 << 1) | (1 << 3) | (1 << 4);

// By reference, never a vector by value: these are inlined into each clone
// and must not carry one ISA's vector calling convention into another.
[[gnu::always_inline]] inline void rotr(Lanes& x, int n) { x = (x >> n) | (x << (32 - n)); }

[[gnu::always_inline]] inline void g(Lanes* v, int a, int b, int c, int d, const Lanes& x, const Lanes& y) {
  v[a] += v[b] + x;
  v[d] ^= v[a];
  rotr(v[d], 16);
  v[c] += v[d];
  v[b] ^= v[c];
  rotr(v[b], 12);
  v[a] += v[b] + y;
  v[d] ^= v[a];
  rotr(v[d], 8);
  v[c] += v[d];
  v[b] ^= v[c];
  rotr(v[b], 7);
}

// cv[i] (lane j) = word i of the keyed hash of message m (lane j); words
// 8..15 of every message are zero.
[[gnu::always_inline]] inline void compress_lanes(const std::uint32_t* key, const Lanes* message, Lanes* cv) {
  Lanes m[16], v[16];
  for (int i = 0; i < 8; ++i) {
    m[i] = message[i];
    m[8 + i] = Lanes{};
    v[i] = Lanes{} + key[i];
  }
  for (int i = 0; i < 4; ++i) v[8 + i] = Lanes{} + kIv[i];
  v[12] = v[13] = Lanes{};
  v[14] = Lanes{} + kBlockLen;
  v[15] = Lanes{} + kFlags;
#pragma GCC unroll 7
  for (const auto& s : kSchedule) {
    g(v, 0, 4, 8, 12, m[s[0]], m[s[1]]);
    g(v, 1, 5, 9, 13, m[s[2]], m[s[3]]);
    g(v, 2, 6, 10, 14, m[s[4]], m[s[5]]);
    g(v, 3, 7, 11, 15, m[s[6]], m[s[7]]);
    g(v, 0, 5, 10, 15, m[s[8]], m[s[9]]);
    g(v, 1, 6, 11, 12, m[s[10]], m[s[11]]);
    g(v, 2, 7, 8, 13, m[s[12]], m[s[13]]);
    g(v, 3, 4, 9, 14, m[s[14]], m[s[15]]);
  }
  for (int i = 0; i < 8; ++i) cv[i] = v[i] ^ v[i + 8];
}

using Compress = void (*)(const std::uint32_t*, const Lanes*, Lanes*);

__attribute__((target("avx512f"))) void compress_avx512(const std::uint32_t* key, const Lanes* message, Lanes* cv) {
  compress_lanes(key, message, cv);
}
__attribute__((target("avx2"))) void compress_avx2(const std::uint32_t* key, const Lanes* message, Lanes* cv) {
  compress_lanes(key, message, cv);
}
void compress_baseline(const std::uint32_t* key, const Lanes* message, Lanes* cv) { compress_lanes(key, message, cv); }

Compress best_compress() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return compress_avx512;
  if (__builtin_cpu_supports("avx2")) return compress_avx2;
  return compress_baseline;
}

}  // namespace

void KeyedChunkHasher::hash_many(std::span<const Hash> raw, Hash* out) const {
  if (key_.is_zero()) {
    std::memcpy(static_cast<void*>(out), raw.data(), raw.size_bytes());
    return;
  }
  // One hash (a single GET's lookup) is one compression, not sixteen lanes'.
  if (raw.size() == 1) {
    out[0] = (*this)(raw[0]);
    return;
  }
  static const Compress compress = best_compress();
  for (std::size_t at = 0; at < raw.size(); at += kLanes) {
    const std::size_t n = std::min<std::size_t>(kLanes, raw.size() - at);
    Lanes message[8] = {}, cv[8];
    for (std::size_t j = 0; j < n; ++j)
      for (int w = 0; w < 8; ++w) {
        std::uint32_t word;
        std::memcpy(&word, raw[at + j].bytes.data() + 4 * w, 4);  // little-endian hosts (hash.cpp)
        message[w][j] = word;
      }
    compress(key_words_, message, cv);
    for (std::size_t j = 0; j < n; ++j)
      for (int w = 0; w < 8; ++w) {
        const std::uint32_t word = cv[w][j];
        std::memcpy(out[at + j].bytes.data() + 4 * w, &word, 4);
      }
  }
}

}  // namespace dedupd::shard
