// What the daemon tells about its fleet link (status, metrics, dedupctl):
// plain values, no libpq, so the HTTP layer can render them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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

// An outbox entry that could not be published (index/outbox.hpp).
struct ParkedItem {
  std::string op;     // "publish" or "drop_hold"
  std::string shard;  // the shard hash, string form
  std::string reason;
  std::uint64_t parked_at = 0;  // unix seconds
};

inline constexpr std::size_t kParkedListed = 50;

// What the lookups' pool holds in memory (FleetLookup::memory_in_use).
struct LookupMemoryInUse {
  std::uint64_t key_filter_bytes = 0, key_filter_max_bytes = 0;
  std::uint64_t key_filters = 0, keys_over_budget = 0;  // keys whose filter is in use; that did not fit
  std::uint64_t key_filter_entries = 0;                 // what the filters in use hold
  int thinnest_bits = 0;                                // of the filters in use (0: none)
  std::uint64_t raw_filter_entries = 0;                 // the raw forms' filter
  int raw_filter_bits = 0;                              // 0: not in use
  bool raw_filter_over_budget = false;                  // did not fit its half of the budget
  std::uint64_t xorb_cache_bytes = 0, xorb_cache_max_bytes = 0;
};

struct PublisherState {
  LinkState state = LinkState::off;
  std::string host;  // this host's name in the fleet
  std::uint64_t outbox_depth = 0;
  std::optional<std::uint64_t> outbox_oldest_age_s{};  // age of the oldest queued entry
  std::uint64_t parked = 0;                            // entries parked: not published, not dropped
  std::vector<ParkedItem> parked_items{};              // the oldest of them (at most kParkedListed)
  std::uint64_t published = 0, drops = 0, replays = 0, expired = 0, failures = 0;
  // Anti-entropy: passes completed, and the differences they queued.
  std::uint64_t reconcile_passes = 0, reconciled_publish = 0, reconciled_drop = 0;
  std::optional<std::uint64_t> last_reconcile{};  // unix seconds of the last pass's end
  std::optional<std::uint64_t> last_contact{};    // unix seconds of the last successful call
  std::string last_error{};                       // rule and message; never the url
  std::optional<std::uint64_t> last_error_at{};
  // The server that answers writes ("host:port" the last call reached). With
  // several hosts in the url (pg_auto_failover's uri) a failover shows as
  // calls reaching another one: counted since the start, the last one's
  // time and the server writes left.
  std::string primary{};
  std::uint64_t failovers = 0;
  LookupMemoryInUse lookup_memory{};             // filled in by the daemon, beside the publisher's own
  std::optional<std::uint64_t> last_failover{};  // unix seconds it was seen
  std::string last_failover_from{};
  // The fleet's set-aside marks at the last read, and the shards of this
  // index set aside for them or brought back when they went.
  std::uint64_t set_aside_marks = 0, set_aside_applied = 0, set_aside_restored = 0;
};

}  // namespace dedupd::daemon::fleet_link
