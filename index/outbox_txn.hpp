// The outbox hooks the index's own write paths call inside their transaction
// (internal: not for users of the index).
#pragma once

#include <lmdb.h>

#include <optional>
#include <string>
#include <vector>

#include "index/impl.hpp"
#include "index/outbox.hpp"

namespace dedupd::index::detail {

// Queues `op` for `shard` when the outbox is on; a no-op otherwise. `now` 0
// takes the wall clock. Returns an LMDB code.
int outbox_enqueue(OpenIndex& im, MDB_txn* txn, OutboxOp op, const Hash& shard, std::uint64_t now);

// An outbox entry and a parked one from their LMDB key and value; nullopt
// when they do not decode (outbox.cpp has the layouts).
std::optional<OutboxEntry> decode_entry(const MDB_val& k, const MDB_val& v);
std::optional<ParkedEntry> decode_parked(const MDB_val& k, const MDB_val& v);

// Appends a description of each malformed outbox entry to `problems`.
int outbox_check(const OpenIndex& im, MDB_txn* txn, std::vector<std::string>& problems);

}  // namespace dedupd::index::detail
