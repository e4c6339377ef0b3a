// Which shards may answer a global-dedup query (issue 41): those of the CAS
// the asking client uploads to, and those of unknown CAS where the operator
// allows them. A shard of another CAS would have the client skip xorbs its
// CAS does not hold, and its upload fail. The index and the fleet store the
// CASes of each shard as normalized URLs (xetcache/cas_url.hpp) separated by
// one space: the same shard bytes may be accepted by several CASes (the same
// file uploaded to two Hubs makes the same session shard). "" is unknown.
#pragma once

#include <string>
#include <string_view>

namespace dedupd::shard {

// True when `cas` is one of the set's.
// Calls fn with each CAS of a set (URLs separated by one space) until it
// returns true; true when one did.
template <class Fn>
bool any_cas(std::string_view cas_set, Fn&& fn) {
  while (!cas_set.empty()) {
    std::size_t end = cas_set.find(' ');
    if (fn(cas_set.substr(0, end))) return true;
    if (end == std::string_view::npos) break;
    cas_set.remove_prefix(end + 1);
  }
  return false;
}

inline bool holds_cas(std::string_view cas_set, std::string_view cas) {
  return any_cas(cas_set, [&](std::string_view c) { return c == cas; });
}

// Puts `cas` in the set (at the end); false when it was there or is empty.
inline bool add_cas(std::string& cas_set, std::string_view cas) {
  if (cas.empty() || holds_cas(cas_set, cas)) return false;
  if (!cas_set.empty()) cas_set += ' ';
  cas_set += cas;
  return true;
}

struct CasScope {
  std::string cas;           // normalized; never empty
  bool unknown_too = false;  // shards of unknown CAS answer as well

  bool admits(std::string_view shard_cas) const {
    return holds_cas(shard_cas, cas) || (unknown_too && shard_cas.empty());
  }
};

}  // namespace dedupd::shard
