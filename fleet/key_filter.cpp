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

namespace {
bool line_holds(const std::uint64_t* line, std::uint64_t bits, int probes) {
  for (int i = 0; i < probes; ++i, bits >>= 9)
    if (!(line[(bits & 511) >> 6] & (1ull << (bits & 63)))) return false;
  return true;
}
}  // namespace

bool KeyFilter::may_contain(std::int64_t prefix) const {
  std::uint64_t bits = 0;
  const std::uint64_t* line = line_of(prefix, bits);
  return line_holds(line, bits, kProbes);
}

void KeyFilter::may_contain_many(std::span<const std::int64_t> prefixes, std::vector<std::uint8_t>& out) const {
  // How many lines are in flight: enough to cover a miss to memory with
  // the tests between, few enough for the CPU's fill buffers.
  constexpr std::size_t kAhead = 16;
  struct Pending {
    const std::uint64_t* line;
    std::uint64_t bits;
  };
  Pending ring[kAhead];
  out.resize(prefixes.size());
  for (std::size_t i = 0; i < prefixes.size() + kAhead; ++i) {
    if (i >= kAhead) {
      const Pending& p = ring[(i - kAhead) % kAhead];
      out[i - kAhead] = line_holds(p.line, p.bits, kProbes) ? 1 : 0;
    }
    if (i < prefixes.size()) {
      Pending& p = ring[i % kAhead];
      p.line = line_of(prefixes[i], p.bits);
      __builtin_prefetch(p.line);
      __builtin_prefetch(p.line + kWordsPerLine - 1);  // the vector aligns it to 16 bytes, not 64
    }
  }
}

}  // namespace dedupd::fleet
