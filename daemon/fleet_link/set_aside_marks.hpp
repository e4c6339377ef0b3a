// The fleet's set-aside marks as this host last read them: a
// shard some host's CAS refused an upload relying on, for that CAS. The
// publisher's thread replaces them every few seconds; fleet lookups (any
// thread) leave out a shard marked for the query's CAS, so one refusal
// anywhere keeps every host from answering with the stale shard.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "fleet/fleet.hpp"

namespace dedupd::daemon::fleet_link {

class SetAsideMarks {
 public:
  void replace(std::vector<fleet::SetAsideMark> marks);
  // Marked for `cas` (or by a mark of unknown CAS); for any CAS when `cas`
  // is nullopt: an answer not scoped to one CAS.
  bool marked(const shard::Hash& shard, const std::optional<std::string>& cas) const;
  std::size_t size() const;

 private:
  mutable std::mutex mu_;
  std::vector<fleet::SetAsideMark> marks_;  // by shard, then CAS
};

}  // namespace dedupd::daemon::fleet_link
