#include "daemon/xetcache/held_back.hpp"

#include <spdlog/spdlog.h>

#include "xetcache/rules.hpp"

namespace dedupd::daemon::xetcache {

void HeldBackList::fail(const std::string& key, std::string reason, std::uint64_t now_mono, const Backoff& backoff) {
  Entry& s = entries_[key];
  ++s.failures;
  s.until_mono = now_mono + dedupd::xetcache::backoff_seconds(s.failures, backoff.base_s, backoff.max_s);
  s.reason = std::move(reason);
  spdlog::warn("xet cache: holding back {} for {} s: {}", key, s.until_mono - now_mono, s.reason);
}

bool HeldBackList::holds(const std::string& key, std::uint64_t now_mono) const {
  auto it = entries_.find(key);
  return it != entries_.end() && now_mono < it->second.until_mono;
}

std::vector<std::string> HeldBackList::describe(std::uint64_t now_mono) const {
  std::vector<std::string> out;
  for (const auto& [key, s] : entries_)
    if (now_mono < s.until_mono)
      out.push_back(key + ": " + s.reason + " (again in " + std::to_string(s.until_mono - now_mono) + " s)");
  return out;
}

std::string group_key(const std::vector<std::string>& members) {
  std::string key = "group:";
  for (const auto& m : members) key += m + ";";
  return key;
}

}  // namespace dedupd::daemon::xetcache
