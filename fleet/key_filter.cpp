#include "fleet/key_filter.hpp"

#include <algorithm>
#include <bit>

namespace dedupd::fleet {
namespace {

constexpr int kBitsPerEntry = 16;
constexpr int kProbes = 7;  // bits set per entry

// Prefixes are hash bytes, but a filter must not degrade if they were not:
// a multiply-xorshift mix spreads any 64-bit input over all bits.
std::uint64_t mix(std::uint64_t v) {
  v ^= v >> 31;
  v *= 0x9E3779B97F4A7C15ull;
  v ^= v >> 29;
  v *= 0xBF58476D1CE4E5B9ull;
  return v ^ (v >> 32);
}

}  // namespace

std::size_t KeyFilter::bytes_for(std::size_t entries) {
  return std::bit_ceil((std::max<std::size_t>(entries, 1) * kBitsPerEntry + 511) / 512) * kWordsPerLine * 8;
}

KeyFilter::KeyFilter(std::size_t entries) {
  std::size_t lines = std::bit_ceil((std::max<std::size_t>(entries, 1) * kBitsPerEntry + 511) / 512);
  words_.assign(lines * kWordsPerLine, 0);
  line_mask_ = lines - 1;
  capacity_ = lines * 512 / kBitsPerEntry;
}

// The line from one mix of the prefix, the bits within it from a second
// one: seven 9-bit positions use 63 of its 64 bits.
const std::uint64_t* KeyFilter::line_of(std::int64_t prefix, std::uint64_t& bits) const {
  std::uint64_t h = mix(std::uint64_t(prefix));
  bits = mix(h);
  return words_.data() + ((h >> 32) & line_mask_) * kWordsPerLine;
}

void KeyFilter::add(std::int64_t prefix) {
  std::uint64_t bits = 0;
  auto* line = const_cast<std::uint64_t*>(line_of(prefix, bits));
  for (int i = 0; i < kProbes; ++i, bits >>= 9) line[(bits & 511) >> 6] |= 1ull << (bits & 63);
  ++added_;
}

bool KeyFilter::may_contain(std::int64_t prefix) const {
  std::uint64_t bits = 0;
  const std::uint64_t* line = line_of(prefix, bits);
  for (int i = 0; i < kProbes; ++i, bits >>= 9)
    if (!(line[(bits & 511) >> 6] & (1ull << (bits & 63)))) return false;
  return true;
}

}  // namespace dedupd::fleet
