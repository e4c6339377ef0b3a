// A blocked Bloom filter of the chunk-table prefixes stored under one fleet
// key. A lookup hashes every query under every live key, but keyed entries
// are a small part of the fleet: the Reader asks the server only for the
// keyed forms this filter may hold (docs/FLEET.md, "Key filters"). No false
// negatives by construction; about 0.2 % false positives at 16 bits per
// entry, about 15 % at 4 (what a filter gets when its key's set has little
// budget left: thinner, never absent). Each test touches one 64-byte line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace dedupd::fleet {

class KeyFilter {
 public:
  static constexpr int kMaxBitsPerEntry = 16;
  static constexpr int kMinBitsPerEntry = 4;
  // Sized for `entries` at `bits_per_entry` (clamped to the two above; at
  // least one line); past that it still answers correctly, with more false
  // positives.
  explicit KeyFilter(std::size_t entries = 0, int bits_per_entry = kMaxBitsPerEntry);
  void add(std::int64_t prefix);
  bool may_contain(std::int64_t prefix) const;
  // may_contain of each prefix, into out[i] (0 or 1): the lines are fetched
  // a few tests ahead, so their memory waits overlap.
  void may_contain_many(std::span<const std::int64_t> prefixes, std::vector<std::uint8_t>& out) const;
  std::size_t capacity() const { return capacity_; }
  std::size_t added() const { return added_; }
  int bits_per_entry() const { return bits_per_entry_; }
  std::size_t bytes() const { return words_.size() * sizeof(std::uint64_t); }
  // What a filter sized for `entries` at `bits_per_entry` takes, in bytes.
  static std::size_t bytes_for(std::size_t entries, int bits_per_entry = kMaxBitsPerEntry);

  // Its bits, for a file that keeps it across a restart
  // (fleet/key_filters_file.hpp), and the filter those bits make again:
  // nullopt when they cannot be one of this layout (a whole number of
  // lines, bits an entry within the bounds). kLayout names how add() places
  // a prefix: a file of another layout is not read.
  static constexpr std::uint32_t kLayout = 1;
  std::span<const std::uint64_t> words() const { return words_; }
  static std::optional<KeyFilter> from_words(int bits_per_entry, std::size_t added, std::vector<std::uint64_t> words);

 private:
  const std::uint64_t* line_of(std::int64_t prefix, std::uint64_t& bits) const;
  static constexpr int kWordsPerLine = 8;  // 512 bits
  std::vector<std::uint64_t> words_;
  std::uint64_t lines_ = 1;
  int bits_per_entry_ = kMaxBitsPerEntry;
  int probes_ = 7;  // bits set per entry
  std::size_t capacity_ = 0;
  std::size_t added_ = 0;
};

}  // namespace dedupd::fleet
