// Which shards may answer a global-dedup query (issue 41): those of the CAS
// the asking client uploads to, and those of unknown CAS where the operator
// allows them. A shard of another CAS would have the client skip xorbs its
// CAS does not hold, and its upload fail. The index and the fleet store the
// CAS of each shard as a normalized URL (xetcache/cas_url.hpp); "" is unknown.
#pragma once

#include <string>
#include <string_view>

namespace dedupd::shard {

struct CasScope {
  std::string cas;           // normalized; never empty
  bool unknown_too = false;  // shards of unknown CAS answer as well

  bool admits(std::string_view shard_cas) const { return shard_cas == cas || (unknown_too && shard_cas.empty()); }
};

}  // namespace dedupd::shard
