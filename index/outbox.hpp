// The outbox: what the fleet still has to learn about this index's shards.
//
// An entry is written in the same LMDB transaction as the change it reports
// (a shard indexed: publish it; a shard removed or expired: drop this host's
// hold), so a crash can never leave a local change without its entry, and the
// publisher (daemon/fleet_link/) can drain it at its own pace without ever holding
// up ingest. Entries are acknowledged only after the fleet committed them;
// replaying one twice is harmless because the fleet is idempotent by shard
// hash. While the outbox is off (no fleet configured) nothing is queued.
//
// An entry the fleet can never take as it is (the shard cannot be rebuilt
// as it was, or the fleet refuses it for what it is, not for an outage) is
// parked instead of acknowledged: it leaves the queue, so it does not block
// what follows, and stays in the index with its reason until it is retried
// (Index::outbox_retry_parked, at each daemon start and on `dedupctl fleet
// retry`). Nothing the fleet should hear of is ever dropped silently.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "shard/hash.hpp"

namespace dedupd::index {

enum class OutboxOp : std::uint8_t { publish = 1, drop_hold = 2 };
inline const char* to_string(OutboxOp op) {
  switch (op) {
    case OutboxOp::publish:
      return "publish";
    case OutboxOp::drop_hold:
      return "drop_hold";
  }
  return "unknown";
}

struct OutboxEntry {
  std::uint64_t seq = 0;  // increasing; acknowledge through it
  OutboxOp op = OutboxOp::publish;
  shard::Hash shard{};
  std::uint64_t queued_at = 0;  // unix seconds
};

struct ParkedEntry {
  OutboxEntry entry;
  std::uint64_t parked_at = 0;  // unix seconds
  std::string reason;           // the error, with its rule
};

// One round of anti-entropy (Index::outbox_reconcile).
struct ReconcileRound {
  std::uint64_t publish = 0;  // live here, not listed by the fleet: queued for publishing
  std::uint64_t drop = 0;     // listed by the fleet, not live here: its hold queued for dropping
  std::uint64_t cas = 0;      // held, but the fleet lacks a CAS it has here: queued for publishing again
  // The round compared the shards up to this hash; the next one starts
  // after it. nullopt: up to the last, the pass is over.
  std::optional<shard::Hash> through;
};

struct OutboxStats {
  bool enabled = false;
  std::uint64_t depth = 0;                     // entries not yet acknowledged
  std::optional<std::uint64_t> oldest_queued;  // unix seconds of the oldest one
  std::uint64_t parked = 0;                    // entries parked (not in depth)
};

}  // namespace dedupd::index
