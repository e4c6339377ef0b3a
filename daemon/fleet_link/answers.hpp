// How the fleet half of an answer went, as the answer layer
// (daemon/answers/) and the HTTP layer see it: plain values, no connection.
#pragma once

#include <cstddef>
#include <cstdint>

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

}  // namespace dedupd::daemon::fleet_link
