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

#include <chrono>
#include <cstdint>
#include <map>
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
  std::vector<LiveKey> live;  // as the last answer listed them, in key order
  struct OfKey {
    KeyFilter filter;
    std::vector<std::int32_t> have;                           // xorb ids whose entries are in the filter, sorted
    std::string complete_for;                                 // generation the filter holds every entry of ("": none)
    std::string listed_at;                                    // generation `todo` was listed at ("": list again)
    std::vector<std::pair<std::int32_t, std::int32_t>> todo;  // (xorb id, chunks) still to add
  };
  std::map<std::int32_t, OfKey> by_key_id;
  // Entries per fetch step; halved when a step runs out of time.
  std::size_t step_entries = 1 << 16;

  // The filter of that key when it is complete for `generation`, else null.
  const KeyFilter* usable(std::int32_t key_id, std::string_view generation) const;
  // One bounded step towards a filter complete for the key's current
  // generation: list the key's xorbs, or fetch the CAS blocks of some. True
  // when the filter is complete (for the generation it last listed).
  Result<bool> step(Connection& c, std::int32_t key_id, std::chrono::steady_clock::time_point deadline);
  // Keys no longer live.
  void keep_only(const std::vector<std::int32_t>& live_ids);
};

}  // namespace dedupd::fleet::detail
