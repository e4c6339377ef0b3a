// What the daemon tells about its fleet link (status, metrics, dedupctl):
// plain values, no libpq, so the HTTP layer can render them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dedupd::daemon::fleet_link {

enum class LinkState : std::uint8_t {
  off,          // no fleet configured
  connecting,   // not connected yet, or reconnecting after a failure
  connected,    // the last call to the primary worked
  unavailable,  // the last call failed; retrying with backoff
};
inline const char* to_string(LinkState s) {
  switch (s) {
    case LinkState::off:
      return "off";
    case LinkState::connecting:
      return "connecting";
    case LinkState::connected:
      return "connected";
    case LinkState::unavailable:
      return "unavailable";
  }
  return "unknown";
}

struct PublisherState {
  LinkState state = LinkState::off;
  std::string host;  // this host's name in the fleet
  std::uint64_t outbox_depth = 0;
  std::optional<std::uint64_t> outbox_oldest_age_s{};  // age of the oldest queued entry
  std::uint64_t published = 0, drops = 0, replays = 0, expired = 0, failures = 0;
  std::optional<std::uint64_t> last_contact{};  // unix seconds of the last successful call
  std::string last_error{};                     // rule and message; never the url
  std::optional<std::uint64_t> last_error_at{};
};

}  // namespace dedupd::daemon::fleet_link
