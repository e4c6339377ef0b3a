#include "fleet/key_filter.hpp"

#include <algorithm>

namespace dedupd::fleet {
namespace {

// Bits set per entry: about ln 2 per bit an entry has (the fewest false
// positives), at most 7, as seven 9-bit positions use 63 bits of one mix.
int probes_for(int bits_per_entry) { return std::clamp((bits_per_entry * 69 + 50) / 100, 1, 7); }

int clamp_bits(int bits_per_entry) {
  return std::clamp(bits_per_entry, KeyFilter::kMinBitsPerEntry, KeyFilter::kMaxBitsPerEntry);
}

std::size_t lines_for(std::size_t entries, int bits_per_entry) {
  return (std::max<std::size_t>(entries, 1) * std::size_t(clamp_bits(bits_per_entry)) + 511) / 512;
}

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

std::size_t KeyFilter::bytes_for(std::size_t entries, int bits_per_entry) {
  return lines_for(entries, bits_per_entry) * kWordsPerLine * sizeof(std::uint64_t);
}

// Any number of lines, not a power of two: a filter sized to the next one
// took up to twice the memory its entries needed.
KeyFilter::KeyFilter(std::size_t entries, int bits_per_entry)
    : lines_(lines_for(entries, bits_per_entry)),
      bits_per_entry_(clamp_bits(bits_per_entry)),
      probes_(probes_for(bits_per_entry_)) {
  words_.assign(lines_ * kWordsPerLine, 0);
  capacity_ = lines_ * 512 / std::size_t(bits_per_entry_);
}

std::optional<KeyFilter> KeyFilter::from_words(int bits_per_entry, std::size_t added,
                                               std::vector<std::uint64_t> words) {
  if (bits_per_entry != clamp_bits(bits_per_entry) || words.empty() || words.size() % kWordsPerLine != 0)
    return std::nullopt;
  KeyFilter f(0, bits_per_entry);
  f.lines_ = words.size() / kWordsPerLine;
  f.words_ = std::move(words);
  f.capacity_ = f.lines_ * 512 / std::size_t(f.bits_per_entry_);
  f.added_ = added;
  return f;
}

// The line from the high half of one mix of the prefix, scaled to the
// line count (a multiply, not a modulo), the bits within it from a second
// mix.
const std::uint64_t* KeyFilter::line_of(std::int64_t prefix, std::uint64_t& bits) const {
  std::uint64_t h = mix(std::uint64_t(prefix));
  bits = mix(h);
  const std::uint64_t line = ((h >> 32) * lines_) >> 32;
  return words_.data() + line * kWordsPerLine;
}

void KeyFilter::add(std::int64_t prefix) {
  std::uint64_t bits = 0;
  auto* line = const_cast<std::uint64_t*>(line_of(prefix, bits));
  for (int i = 0; i < probes_; ++i, bits >>= 9) line[(bits & 511) >> 6] |= 1ull << (bits & 63);
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
  return line_holds(line, bits, probes_);
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
      out[i - kAhead] = line_holds(p.line, p.bits, probes_) ? 1 : 0;
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
