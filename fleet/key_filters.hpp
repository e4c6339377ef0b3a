// The Reader's key filters: per live fleet key, a KeyFilter of the prefixes
// of every chunk entry stored under it, and the key "generation" it is
// complete for. The generation is the xmin of the key's dedupd.chunk_key
// row: every transaction that adds or removes xorbs under a key updates
// that row (the writer's use count), so while a lookup's snapshot shows the
// same xmin it shows the same keyed xorbs, and a filter complete for that
// generation cannot hide an entry. Any other generation: the filter is not
// used. Built from the xorbs' stored CAS blocks (the stored hashes), a
// bounded step at a time, so a refresh fits in a lookup's spare time.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fleet/connection.hpp"
#include "fleet/key_filter.hpp"
#include "shard/keys.hpp"

namespace dedupd::fleet::detail {

// A live key as the server last listed it.
struct LiveKey {
  std::int32_t id = 0;
  shard::Key key{};
  std::string generation;
};

struct KeyFilters {
  explicit KeyFilters(std::shared_ptr<std::atomic<std::int64_t>> shared_budget);
  ~KeyFilters();
  KeyFilters(const KeyFilters&) = delete;
  KeyFilters& operator=(const KeyFilters&) = delete;

  std::vector<LiveKey> live;  // as the last answer listed them, in key order
  struct Listed {
    std::int32_t id;  // this connection's row id, to fetch it
    std::int32_t chunks;
    shard::Hash xorb;
  };
  struct OfKey {
    KeyFilter filter;
    // Xorbs whose entries are in the filter, sorted. By hash, not row id:
    // a (xorb hash, key) form always has the same CAS block, while ids and
    // generations may be handed out again by a promoted standby.
    std::vector<shard::Hash> have;
    std::string complete_for;     // generation the filter holds every entry of ("": none)
    std::string listed_at;        // generation `todo` was listed at ("": list again)
    std::vector<Listed> todo;     // listed, not yet in the filter
    std::int64_t reserved = 0;    // of the budget, for `filter`
    std::string over_budget_for;  // generation whose filter did not fit ("": none)
  };
  std::map<shard::Key, OfKey> by_key;
  // How fast CAS blocks came in (entries per second; 0: not measured yet),
  // and how long the last step's statement took: a step is sized to what
  // should arrive in the time it is given.
  double entries_per_second = 0;
  double last_step_seconds = 0;

  // The filter of that key when it is complete for `generation`, else null.
  const KeyFilter* usable(const shard::Key& key, std::string_view generation) const;
  // One step towards a filter complete for the key's current generation:
  // list the key's xorbs, or fetch the CAS blocks of as many as should
  // arrive in `seconds`. Each statement is bounded by `deadline` (past it
  // the connection is left mid-statement: fleet.timeout). True when the
  // filter is complete (for the generation it last listed).
  Result<bool> step(Connection& c, const LiveKey& key, double seconds, std::chrono::steady_clock::time_point deadline);
  // The filter for the key's generation did not fit the budget: it is
  // asked in every form until the generation moves.
  bool over_budget(const LiveKey& key) const;
  // Drops the filters of keys no longer in `live`.
  void keep_only_live();
  // A new connection, maybe to another server: every filter is listed
  // again before it is used (what it holds stays).
  void forget_generations();

 private:
  static bool finish(OfKey& k);
  // Sets k's share of the budget to `bytes`; false (and unchanged) when
  // that would pass the budget.
  bool resize_reservation(OfKey& k, std::int64_t bytes);
  void erase(const shard::Key& key);

  std::shared_ptr<std::atomic<std::int64_t>> budget_;
};

}  // namespace dedupd::fleet::detail
