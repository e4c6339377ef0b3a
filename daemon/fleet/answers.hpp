// The fleet half of an answer as the service hands it to the HTTP layer:
// plain values (fleet/fleet.hpp's types), no connection.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "fleet/fleet.hpp"

namespace dedupd::daemon::fleet_link {

// The most connections the daemon's fleet pool keeps (FleetLookup): the
// HTTP layer runs that many reads that may wait on the fleet at once, and
// two more (daemon/api/http/job_queue.hpp).
inline constexpr std::size_t kFleetPoolMax = 8;

// How the fleet part of one answer went.
enum class Reach : std::uint8_t {
  off,          // no fleet configured: the answer is the local one, unmarked
  answered,     // the fleet answered within the bound
  unavailable,  // down, slow or unreachable: "fleet": "unavailable"
};
inline const char* to_string(Reach r) {
  switch (r) {
    case Reach::off:
      return "off";
    case Reach::answered:
      return "answered";
    case Reach::unavailable:
      return "unavailable";
  }
  return "unknown";
}

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

}  // namespace dedupd::daemon::fleet_link
