// Hooks the index calls on rare events, so the daemon can log or count them
// and tests can expect them (GMock). Called on the writer's thread, or the
// opening thread; must not call back into the index.
#pragma once

#include <cstdint>

#include "base/result.hpp"

namespace dedupd::index {

class Observer {
 public:
  virtual ~Observer() = default;
  // The map was full and has grown; the transaction is retried.
  virtual void map_grown(std::uint64_t old_size, std::uint64_t new_size) = 0;
  // mdb_reader_check found reader slots of dead processes at open.
  virtual void stale_readers_cleared(int count) = 0;
  // Merging recent chunk entries after a (successful) ingest failed; the
  // entries stay queryable and the merge is retried after the next ingest.
  virtual void merge_failed(const base::Error& error) = 0;
  // A committed transaction queued fleet outbox entries (an ingest, a
  // removal, an expiry, the outbox turned on): whoever drains the outbox
  // may start now. Must return at once.
  virtual void outbox_queued() {}
  // The in-place upgrade of an older schema committed one more step: `done`
  // chunk entries rewritten so far in this open, of `total` in the index.
  // Called on the opening thread between the upgrade's transactions, which
  // on a large index take a while before the index is ready.
  virtual void upgrade_progress(std::uint64_t /*done*/, std::uint64_t /*total*/) {}
};

}  // namespace dedupd::index
