// What a lookup hit needs beyond its chunk row, per xorb row id: the xorb's
// hash, key and chunk count (immutable while the row lives), its fleet
// shards with their holders (read at a known time, used for at most
// ConnectOptions::holders_max_age), and, once lookups have hit the xorb
// often enough, its whole CAS block (the 48-byte chunk entries, immutable).
//
// One cache may serve every Reader of a daemon, on any thread: a block
// fetched by one is there for the others. Row ids are never handed out
// twice by one database, but a database restored from an older dump, or
// another server, may hand them out again. So entries belong to an era,
// one per "epoch" (the server's start time and the file nodes of the
// tables the cache is filled from, which a restore, TRUNCATE or VACUUM
// FULL makes anew): a Reader finds only what was read where it reads.
// clear() ends every era; whoever knows of an outage or a reconnection
// calls it (a Reader with its own cache, or the daemon's pool).
//
// Entries are charged to a byte budget; the least recently used are
// dropped to make room. A block is worth fetching whole once lookups have
// hit it about once per kBytesPerHit of it (the Reader's fill decides with
// the hits find() counts): then the block costs the server what slicing
// those entries out one by one would. Hits of earlier lookups count only
// while blocks stay long enough to pay for themselves: when more hits are
// spread than the budget holds blocks for, fetching them whole would evict
// each before its next hit, so earlier hits count less (down to 1/256 of a
// hit) each time a block leaves having paid back less than it cost, and
// more again each time one leaves having paid.
#pragma once

#include <chrono>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "shard/hash.hpp"
#include "shard/keys.hpp"

namespace dedupd::fleet {

struct CachedXorb {
  shard::Hash hash{};
  shard::Key key{};  // zero: raw
  std::int32_t chunks = 0;
  bool has_holders = false;
  std::string holders;                                     // "hex=hostA,hostB hex2=hostC" (answer_text.hpp)
  std::chrono::steady_clock::time_point holders_at{};      // when the statement that read them was sent
  std::shared_ptr<const std::vector<std::uint8_t>> block;  // the whole CAS block; null: not held
};

class XorbCache {
 public:
  explicit XorbCache(std::int64_t budget_bytes);
  ~XorbCache();
  XorbCache(const XorbCache&) = delete;
  XorbCache& operator=(const XorbCache&) = delete;

  // The era of what is read from the tables named `epoch`: the same for
  // every caller until clear().
  std::uint32_t era(std::string_view epoch);

  struct Found {
    std::shared_ptr<const CachedXorb> x;  // null: not held
    // Hits that speak for fetching its block whole: `hits`, and those of
    // earlier lookups as much as they count now.
    std::int64_t hits = 0;
  };
  // Row `id`'s entry in `era`, which becomes the most recently used, with
  // `hits` more counted against it (this lookup's).
  Found find(std::uint32_t era, std::int32_t id, std::int64_t hits);
  // Keeps `x` as row `id`'s entry in `era` (replacing any, whose hits it
  // keeps), dropping the least recently used to make room. An entry that
  // does not fit even then is kept without its block, or not at all; one of
  // an ended era is not kept.
  void put(std::uint32_t era, std::int32_t id, CachedXorb x, std::int64_t hits);
  // The budget: the most all entries may cost, so the largest block one may hold.
  std::int64_t budget() const { return budget_; }
  void clear();

  std::int64_t bytes() const;
  std::size_t size() const;
  std::uint64_t evictions() const;
  // How much a hit of an earlier lookup counts now (1 down to 1/256).
  double earlier_hit_weight() const;

  static constexpr std::int64_t kBytesPerHit = 4096;

  // What an entry costs besides its holder text and block.
  static constexpr std::int64_t kEntryOverhead = 192;
  static std::int64_t cost(const CachedXorb& x) {
    return kEntryOverhead + std::int64_t(x.holders.capacity()) + std::int64_t(x.block ? x.block->capacity() : 0);
  }

 private:
  using Id = std::uint64_t;  // era << 32 | row id
  struct Entry {
    std::shared_ptr<const CachedXorb> x;
    std::int64_t hits = 0;  // since the entry was made, or since its block came
    std::int64_t charged = 0;
    std::list<Id>::iterator lru;
  };
  // `evicted`: dropped for room (its block, if any, is judged on what it
  // paid back), not replaced.
  void erase(std::unordered_map<Id, Entry>::iterator it, bool evicted);

  const std::int64_t budget_;
  mutable std::mutex mu_;
  std::map<std::string, std::uint32_t, std::less<>> eras_;  // under mu_: the live ones
  std::uint32_t next_era_ = 1;                              // under mu_
  std::unordered_map<Id, Entry> entries_;                   // under mu_
  std::list<Id> lru_;                                       // under mu_; front: most recently used
  std::int64_t charged_ = 0;                                // under mu_
  std::uint64_t evictions_ = 0;                             // under mu_
  int discount_ = 0;                                        // under mu_; an earlier hit counts 2^-discount_/4
};

}  // namespace dedupd::fleet
