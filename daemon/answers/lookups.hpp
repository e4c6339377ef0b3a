// One question's way to its answer: the index as it is open now and, unless
// the question is for this host alone, the fleet for what the index lacks.
// Every answer of this layer (chunk.hpp, chunk_batch.hpp, xorb.hpp, ...)
// takes one; the HTTP layer opens it per request.
#pragma once

#include <optional>

#include "daemon/answers/sources.hpp"

namespace dedupd::daemon::answers {

class Lookups {
 public:
  enum class Scope : std::uint8_t {
    with_fleet,  // the fleet is asked for what this index lacks (when one is configured)
    local_only,  // this host's index alone (?local_only)
  };

  // nullopt while the index is not open: nothing can be answered yet.
  static std::optional<Lookups> open(Sources& sources, Scope scope = Scope::with_fleet) {
    const index::Index* index = sources.index();
    if (!index) return std::nullopt;
    return Lookups(sources, *index, scope == Scope::with_fleet ? &sources.fleet() : nullptr);
  }

  const index::Index& index() const { return *index_; }
  // Where a miss is asked next; nullptr: this host's index alone.
  FleetPort* fleet() const { return fleet_; }
  core::GlobalDedupKey global_dedup_key() const { return sources_->global_dedup_key(); }

 private:
  Lookups(Sources& sources, const index::Index& index, FleetPort* fleet)
      : sources_(&sources), index_(&index), fleet_(fleet) {}

  Sources* sources_;
  const index::Index* index_;
  FleetPort* fleet_;
};

}  // namespace dedupd::daemon::answers
