// What the fleet adds to a batch of chunk answers: the locations of the
// chunks this index lacks, asked in one round trip, and where each belongs
// in the batch. An answer merges the two halves by query: local first.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "daemon/answers/sources.hpp"
#include "fleet/fleet.hpp"
#include "index/types.hpp"

namespace dedupd::daemon::answers {

// The fleet's locations of the chunks a batch did not find locally.
struct FleetMisses {
  Reach reach = Reach::off;
  std::vector<std::uint32_t> queries{};  // indexes into the batch, ascending
  fleet::ChunkAnswers answers{};         // answers.of(j) belongs to queries[j]

  // The fleet locations of query i (empty when it was found locally or not asked).
  std::span<const fleet::ChunkLocation> of(std::uint32_t i) const {
    if (reach != Reach::answered) return {};
    // Every query up to i asked (a block missed locally): no search.
    if (i < queries.size() && queries[i] == i) return answers.of(i);
    auto it = std::lower_bound(queries.begin(), queries.end(), i);
    if (it == queries.end() || *it != i) return {};
    return answers.of(std::size_t(it - queries.begin()));
  }
};

// Asks `fleet` for the queries of `raw` without a location in `local` (a
// query past its end counts as one), all in one round trip, into `out`.
// A fleet that answers fewer queries than it was asked is unavailable. With
// `only_if_idle`, nothing is asked while every fleet connection is lent
// out: nullopt, and `out` is empty (the caller asks again in turn). Lookups
// asked ahead must not turn a busy pool into an "unavailable" answer.
std::optional<Reach> ask_fleet_for_misses(FleetPort& fleet, std::span<const shard::Hash> raw,
                                          const index::BatchResult& local, FleetMisses& out, bool only_if_idle);

// The fleet's part of an answer made of several: unavailable once any part
// was, otherwise what the first part said.
inline Reach combine_reach(Reach so_far, Reach part) {
  return part == Reach::unavailable || so_far == Reach::off ? part : so_far;
}

}  // namespace dedupd::daemon::answers
