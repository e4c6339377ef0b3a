// The Reader's cache of what a hit needs beyond its chunk row, per xorb row
// id: the xorb's hash, key and chunk count (immutable while the row lives),
// its fleet shards with their holders (read at a known time, used for at
// most ConnectOptions::holders_max_age), and, when lookups hit the xorb
// often enough, its whole CAS block (the 48-byte chunk entries, immutable).
//
// Row ids are never handed out twice by one database, but a database
// restored from an older dump, or a promoted standby, may hand them out
// again: the Reader clears the cache on each new connection and whenever a
// lookup's answer shows the tables were made anew (their file nodes, the
// "epoch"). Entries are charged to a byte budget that the Readers of a
// daemon share; the least recently used are dropped to make room.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "shard/hash.hpp"
#include "shard/keys.hpp"

namespace dedupd::fleet::detail {

struct CachedXorb {
  shard::Hash hash{};
  shard::Key key{};  // zero: raw
  std::int32_t chunks = 0;
  bool has_holders = false;
  std::string holders;                                 // "hex=hostA,hostB hex2=hostC" (answer_text.hpp)
  std::chrono::steady_clock::time_point holders_at{};  // when the statement that read them was sent
  std::vector<std::uint8_t> block;                     // the whole CAS block; empty: not held
};

class XorbCache {
 public:
  // Null budget: this cache's own kDefaultXorbCacheBytes.
  explicit XorbCache(std::shared_ptr<std::atomic<std::int64_t>> shared_budget);
  ~XorbCache();
  XorbCache(const XorbCache&) = delete;
  XorbCache& operator=(const XorbCache&) = delete;

  // The entry of row `id`, or null; a found entry becomes the most recently
  // used. Valid until the next put() or clear().
  CachedXorb* find(std::int32_t id);
  // Keeps `x` as row `id`'s entry (replacing any), dropping least recently
  // used entries to make room. An entry that does not fit even then is kept
  // without its block, or not at all.
  void put(std::int32_t id, CachedXorb x);
  // Room a block could have: what the budget has left plus what this cache
  // holds (it may drop its own entries for it).
  std::int64_t room() const;
  void clear();

  std::int64_t bytes() const { return charged_; }
  std::size_t size() const { return entries_.size(); }
  std::uint64_t evictions() const { return evictions_; }

  // What an entry costs besides its holder text and block.
  static constexpr std::int64_t kEntryOverhead = 160;
  static std::int64_t cost(const CachedXorb& x) {
    return kEntryOverhead + std::int64_t(x.holders.capacity()) + std::int64_t(x.block.capacity());
  }

 private:
  struct Entry {
    CachedXorb x;
    std::int64_t charged = 0;
    std::list<std::int32_t>::iterator lru;
  };
  bool charge(std::int64_t bytes);  // from the budget, evicting as needed
  void erase(std::unordered_map<std::int32_t, Entry>::iterator it);

  std::shared_ptr<std::atomic<std::int64_t>> budget_;
  std::unordered_map<std::int32_t, Entry> entries_;
  std::list<std::int32_t> lru_;  // front: most recently used
  std::int64_t charged_ = 0;
  std::uint64_t evictions_ = 0;
};

}  // namespace dedupd::fleet::detail
