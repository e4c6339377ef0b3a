// The outbox hooks the index's own write paths call inside their transaction
// (internal: not for users of the index).
#pragma once

#include <lmdb.h>

#include <string>
#include <vector>

#include "index/impl.hpp"
#include "index/outbox.hpp"

namespace dedupd::index::detail {

// Queues `op` for `shard` when the outbox is on; a no-op otherwise. `now` 0
// takes the wall clock. Returns an LMDB code.
int outbox_enqueue(Index::Impl& im, MDB_txn* txn, OutboxOp op, const Hash& shard, std::uint64_t now);

// Appends a description of each malformed outbox entry to `problems`.
int outbox_check(const Index::Impl& im, MDB_txn* txn, std::vector<std::string>& problems);

}  // namespace dedupd::index::detail
