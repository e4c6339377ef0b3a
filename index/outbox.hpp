// The outbox: what the fleet still has to learn about this index's shards.
//
// An entry is written in the same LMDB transaction as the change it reports
// (a shard indexed: publish it; a shard removed or expired: drop this host's
// hold), so a crash can never leave a local change without its entry, and the
// publisher (daemon/fleet/) can drain it at its own pace without ever holding
// up ingest. Entries are acknowledged only after the fleet committed them;
// replaying one twice is harmless because the fleet is idempotent by shard
// hash. While the outbox is off (no fleet configured) nothing is queued.
#pragma once

#include <cstdint>
#include <optional>

#include "shard/hash.hpp"

namespace dedupd::index {

enum class OutboxOp : std::uint8_t { publish = 1, drop_hold = 2 };
const char* to_string(OutboxOp op);

struct OutboxEntry {
  std::uint64_t seq = 0;  // increasing; acknowledge through it
  OutboxOp op = OutboxOp::publish;
  shard::Hash shard{};
  std::uint64_t queued_at = 0;  // unix seconds
};

struct OutboxStats {
  bool enabled = false;
  std::uint64_t depth = 0;                     // entries not yet acknowledged
  std::optional<std::uint64_t> oldest_queued;  // unix seconds of the oldest one
};

}  // namespace dedupd::index
