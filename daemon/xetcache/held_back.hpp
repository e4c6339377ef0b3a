// Failure isolation: a file or a merge group that fails is held back and
// tried again after a backoff (xetcache::backoff_seconds), while everything
// else goes on. "Held back", not "set aside": that word is kept for a shard
// a CAS refused (learn/, fleet_link/), which the steward never decides.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dedupd::daemon::xetcache {

struct Backoff {
  std::uint64_t base_s = 60;
  std::uint64_t max_s = 24 * 3600;
};

class HeldBackList {
 public:
  // One more failure of `key` (a file path, or group_key of a merge's members).
  void fail(const std::string& key, std::string reason, std::uint64_t now_mono, const Backoff& backoff);
  bool holds(const std::string& key, std::uint64_t now_mono) const;
  // `key` worked: its next failure waits the shortest time again.
  void forget(const std::string& key) { entries_.erase(key); }
  // For the status: what waits, why, and for how long yet.
  std::vector<std::string> describe(std::uint64_t now_mono) const;

 private:
  struct Entry {
    std::uint32_t failures = 0;
    std::uint64_t until_mono = 0;
    std::string reason;
  };
  std::map<std::string, Entry> entries_;
};

// The held-back key of a merge group.
std::string group_key(const std::vector<std::string>& members);

}  // namespace dedupd::daemon::xetcache
