// The 32-byte Xet hash and its string form. Xet prints a hash as four
// 16-digit hex groups, each the little-endian u64 of one 8-byte word; users
// paste hashes in that form, so it is the only form we print or accept.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "base/result.hpp"

namespace dedupd::shard {

struct Hash {
  std::array<std::uint8_t, 32> bytes{};

  static Hash from_bytes(std::span<const std::uint8_t> b) {
    Hash h;
    std::memcpy(h.bytes.data(), b.data(), 32);
    return h;
  }
  // Parses the Xet string form: exactly 64 hex digits.
  static base::Result<Hash> parse(std::string_view text);
  // Parses plain byte-order hex (as sha256sum prints).
  static base::Result<Hash> parse_hex_bytes(std::string_view text);

  std::string to_string() const;     // Xet string form
  std::string to_hex_bytes() const;  // byte order hex

  // The i-th 8-byte word as a little-endian u64 (i in 0..3).
  std::uint64_t word(int i) const {
    std::uint64_t w;
    std::memcpy(&w, bytes.data() + 8 * i, 8);  // x86-64/aarch64 are LE; see static_assert in hash.cpp
    return w;
  }
  // The 8-byte truncated key used by Xet lookup tables.
  std::uint64_t truncated() const { return word(0); }
  bool is_zero() const;
  const std::uint8_t* data() const { return bytes.data(); }

  auto operator<=>(const Hash&) const = default;
  bool operator==(const Hash&) const = default;
};

// xet-core's order of hashes: word by word as u64 (its hash type is four
// u64 words). Its in-memory shard writes files and xorbs in this order, and
// then writes the file and xorb lookup tables unsorted, in section order, so
// a shard laid out otherwise would need sorted tables that disagree with its
// sections. Byte order (operator<) differs: it compares the low byte first.
inline bool xet_order_less(const Hash& a, const Hash& b) {
  for (int i = 0; i < 4; ++i)
    if (a.word(i) != b.word(i)) return a.word(i) < b.word(i);
  return false;
}

}  // namespace dedupd::shard

template <>
struct std::hash<dedupd::shard::Hash> {
  std::size_t operator()(const dedupd::shard::Hash& h) const noexcept { return h.word(0) ^ h.word(3); }
};
