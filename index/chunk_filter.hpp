// An in-memory filter over the stored chunk hashes of both chunk tables, so
// that a lookup skips the B-tree search for a stored form that is certainly
// absent. A query probes the raw hash and one keyed form per live key, and
// nearly all of those forms are absent; without the filter each costs two
// duplicate-sorted searches.
//
// A split-block Bloom filter (one 32-byte block per entry, one bit in each
// of its eight words): one cache line touched per test, about 1.3 % false
// positives at 10 bits per entry. It is fed the first kFingerprintBytes of
// the stored hash, the part the chunk tables keep, so it can be rebuilt from
// the tables alone. That is also its floor: an absent form whose first 4
// bytes equal a stored one's passes whatever the filter's size, about N /
// 2^32 of them at N entries (0.2 % at 10 M, 6 % at 268 M).
//
// Sizing (chunk_filter_sizes() below): from the entries there are when it
// is built, with room to grow, bounded by Options::filter_memory. A filter
// sized down to that bound says so (at_bound()) and is never rebuilt for
// growth: past its capacity it only lets more absent forms through, which
// costs searches, never answers.
//
// Concurrency: one writer (the index's writer, under its mutex) sets bits,
// any number of readers test them. Entries are added before the transaction
// that stores them commits; `covered()` then says up to which transaction
// id the filter is complete, and a reader whose snapshot is newer ignores
// the filter (a write by another process, or a filter still being built).
// Removed entries stay set: the filter only grows more permissive until the
// next rebuild. The index keeps two: one over both chunk tables, which
// rules a form out, and one over the recent table only, which spares the
// second search for the many entries that already sit in the main table.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace dedupd::index {

// How large the two filters of an index are built (chunk_filter_sizes()).
struct ChunkFilterSizes {
  std::uint64_t all = 0;     // capacity of the filter of both chunk tables
  std::uint64_t recent = 0;  // of the recent table's
  bool at_bound = false;     // shrunk to fit max_bytes
};

class ChunkFilter {
 public:
  static constexpr std::size_t kFingerprintBytes = 4;
  // 10 bits: 1.3 % of absent forms pass, against 3.3 % at 8 and 0.55 % at
  // 12 (chunk_filter_test.cpp measures them); at 268 M entries the 4-byte
  // fingerprint's 6 % floor dominates anyway.
  static constexpr std::size_t kBitsPerEntry = 10;

  // Room for `capacity` entries at kBitsPerEntry; beyond that the false
  // positive rate rises and `full()` asks for a rebuild, unless the filter
  // was sized down to the memory bound (`at_bound`).
  explicit ChunkFilter(std::uint64_t capacity, bool at_bound = false);
  // The entries `bytes` of filter hold at kBitsPerEntry.
  static constexpr std::uint64_t capacity_in(std::uint64_t bytes) { return bytes / kBitsPerEntry * 8; }
  // A filter of 2 MiB or more maps whole huge pages (see map_blocks).
  static constexpr std::size_t kHugePage = std::size_t(2) << 20;
  // What a filter of `capacity` maps, the rounding included: bytes() before
  // it is built.
  static std::size_t mapped_bytes(std::uint64_t capacity);
  // The largest capacity whose filter maps at most `bytes`.
  static std::uint64_t capacity_within(std::uint64_t bytes) {
    return capacity_in(bytes >= kHugePage ? bytes / kHugePage * kHugePage : bytes);
  }
  // A young index is not rebuilt after every shard, and 1.3 MiB is nothing
  // beside the map.
  static constexpr std::uint64_t kFloorEntries = 1u << 20;
  ChunkFilter(const ChunkFilter&) = delete;
  ChunkFilter& operator=(const ChunkFilter&) = delete;

  // Writer only. `stored_hash` needs only its first kFingerprintBytes.
  void add(const std::uint8_t* stored_hash) {
    std::uint64_t h = mix(stored_hash);
    Block& b = blocks_[block_of(stored_hash)];
    for (unsigned i = 0; i < 8; ++i) {
      // A single writer: a relaxed load and store (no locked RMW) is enough;
      // atomics keep concurrent readers well defined.
      auto& w = b.words[i];
      w.store(w.load(std::memory_order_relaxed) | bit_of(h, i), std::memory_order_relaxed);
    }
    added_.store(added_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  bool may_contain(const std::uint8_t* stored_hash) const {
    std::uint64_t h = mix(stored_hash);
    const Block& b = blocks_[block_of(stored_hash)];
    for (unsigned i = 0; i < 8; ++i)
      if (!(b.words[i].load(std::memory_order_relaxed) & bit_of(h, i))) return false;
    return true;
  }

  // Starts loading the cache line may_contain(stored_hash) will read, so
  // that a caller testing many hashes waits for their lines together.
  void prefetch(const std::uint8_t* stored_hash) const { __builtin_prefetch(&blocks_[block_of(stored_hash)]); }

  std::uint64_t capacity() const { return capacity_; }
  std::uint64_t added() const { return added_.load(std::memory_order_relaxed); }
  bool full() const { return added() > capacity_; }
  bool at_bound() const { return at_bound_; }
  // Full, and a rebuild could make room (it was not sized down to the bound).
  bool outgrown() const { return full() && !at_bound_; }
  // What it maps: its blocks, rounded up to whole huge pages from 2 MiB.
  std::size_t bytes() const { return blocks_.get_deleter().bytes; }
  // The expected share of absent stored forms that pass may_contain() with
  // what it holds now: the Bloom filter's false positives (from the entries
  // per block) plus the fingerprint's floor. For status and metrics.
  double false_positive_rate() const;

  // The newest transaction id whose entries are all in the filter, or 0
  // while it covers none (being built, or given up on).
  std::uint64_t covered() const { return covered_.load(std::memory_order_acquire); }

  // Writer bookkeeping (under the index's writer mutex): `expect_after`
  // starts tracking at a snapshot, `committed` follows each commit of this
  // process; a commit id that does not follow the last one means another
  // process wrote, and the filter is given up on.
  void expect_after(std::uint64_t txn_id) { next_ = txn_id + 1, valid_from_ = txn_id; }
  void committed(std::uint64_t txn_id) {
    if (txn_id != next_) broken_.store(true, std::memory_order_relaxed);
    next_ = txn_id + 1;
    if (broken()) covered_.store(0, std::memory_order_release);
    else if (published_) covered_.store(txn_id, std::memory_order_release);
  }
  // The oldest snapshot the filter speaks for: a filter of the recent table
  // starts empty when a merge has emptied the table, and a reader of an
  // older snapshot still sees the entries that merge moved; a built filter
  // may lack entries removed while it was read.
  std::uint64_t valid_from() const { return valid_from_; }
  // Declares the filter complete up to the last commit (after a build).
  bool publish() {
    if (broken()) return false;
    published_ = true;
    covered_.store(next_ - 1, std::memory_order_release);
    return true;
  }
  bool broken() const { return broken_.load(std::memory_order_relaxed); }

 private:
  struct alignas(32) Block {
    std::atomic<std::uint32_t> words[8];
  };

  static std::uint64_t mix(const std::uint8_t* p) {
    std::uint64_t x = 0;
    for (std::size_t i = 0; i < kFingerprintBytes; ++i) x = x << 8 | p[i];
    // Stored hashes are already uniform; the multiply spreads 32 bits over 64.
    x *= 0x9e3779b97f4a7c15ull;
    return x ^ (x >> 29);
  }
  // The block follows the hash order, so adding entries in table order (a
  // rebuild, a sorted ingest) walks the blocks front to back.
  std::size_t block_of(const std::uint8_t* p) const {
    std::uint64_t top = std::uint64_t(p[0]) << 24 | std::uint64_t(p[1]) << 16 | std::uint64_t(p[2]) << 8 | p[3];
    return std::size_t(top * num_blocks_ >> 32);
  }
  static std::uint32_t bit_of(std::uint64_t h, unsigned i) {
    static constexpr std::uint32_t kSalt[8] = {0x47b6137bu, 0x44974d91u, 0x8824ad5bu, 0xa2b7289du,
                                               0x705495c7u, 0x2df1424bu, 0x9efc4947u, 0x5c6bfb31u};
    return std::uint32_t(1) << ((std::uint32_t(h) * kSalt[i]) >> 27);
  }

  std::uint64_t capacity_;
  bool at_bound_;
  std::size_t num_blocks_;
  static std::size_t blocks_for(std::uint64_t capacity);
  // What `blocks` take mapped: whole huge pages from kHugePage.
  static std::size_t mapping_of(std::size_t blocks);
  struct Unmap {
    std::size_t bytes;
    void operator()(Block* b) const;
  };
  static std::unique_ptr<Block[], Unmap> map_blocks(std::size_t n);
  std::unique_ptr<Block[], Unmap> blocks_;
  std::atomic<std::uint64_t> added_{0};
  std::atomic<std::uint64_t> covered_{0};
  std::uint64_t next_ = 0;
  std::uint64_t valid_from_ = 0;
  std::atomic<bool> broken_{false};
  bool published_ = false;
};

// The capacities of the filters of an index of `entries`, both within
// `max_bytes`. The filter of both tables gets room for the entries there
// are and a quarter more for the next ingests (so a rebuild each time the
// index grows by a quarter), at least `floor`. The recent table is merged
// once it holds max(merge_threshold, main / 16) entries (merge.cpp), and the
// last shard may overshoot that: its filter gets twice that and a little,
// never more than the other's (a huge threshold means "never merge"). When
// the two would pass max_bytes both shrink in proportion: they then
// saturate as the index grows, and lookups search more absent forms, with
// the same answers.
ChunkFilterSizes chunk_filter_sizes(std::uint64_t entries, std::uint64_t merge_threshold, std::uint64_t max_bytes,
                                    std::uint64_t floor = ChunkFilter::kFloorEntries);

}  // namespace dedupd::index
