#include "daemon/expiry/policy.hpp"

#include <algorithm>
#include <tuple>

namespace dedupd::daemon::expiry {

std::optional<std::uint64_t> deletion_time(const ShardRecord& s, std::optional<std::chrono::seconds> grace) {
  if (!s.expiry || !grace) return std::nullopt;
  return *s.expiry + std::uint64_t(grace->count());
}

std::vector<FileDue> files_past_grace(const std::vector<ShardRecord>& shards, std::uint64_t now,
                                      std::optional<std::chrono::seconds> grace) {
  std::vector<FileDue> out;
  for (const auto& s : shards) {
    if (s.live) continue;  // entries still served: the file stays whatever the clock says
    auto at = deletion_time(s, grace);
    if (!at || now < *at) continue;
    for (const auto& p : s.paths) out.push_back({s.hash, p});
  }
  return out;
}

std::optional<std::uint64_t> next_deletion(const std::vector<ShardRecord>& shards, std::uint64_t now,
                                           std::optional<std::chrono::seconds> grace) {
  std::optional<std::uint64_t> next;
  for (const auto& s : shards) {
    if (s.live || s.paths.empty()) continue;
    auto at = deletion_time(s, grace);
    if (!at || *at <= now) continue;
    if (!next || *at < *next) next = at;
  }
  return next;
}

std::vector<shard::Hash> evictions_for_cap(std::vector<ShardBytes> shards, std::uint64_t max_bytes) {
  std::erase_if(shards, [](const ShardBytes& s) { return !s.expiry; });
  std::uint64_t total = 0;
  for (const auto& s : shards) total += s.bytes;
  std::sort(shards.begin(), shards.end(), [](const ShardBytes& a, const ShardBytes& b) {
    return std::tie(a.created, *a.expiry, a.hash) < std::tie(b.created, *b.expiry, b.hash);
  });
  std::vector<shard::Hash> out;
  for (const auto& s : shards) {
    if (total <= max_bytes) break;
    if (s.bytes == 0) continue;  // nothing on disk to win back
    out.push_back(s.hash);
    total -= s.bytes;
  }
  return out;
}

std::uint64_t next_wake(std::uint64_t now, std::initializer_list<std::optional<std::uint64_t>> moments,
                        std::chrono::seconds tick) {
  std::uint64_t wake = now + std::uint64_t(std::max<std::int64_t>(1, tick.count()));
  for (auto t : moments)
    if (t) wake = std::min(wake, *t);
  return std::max(wake, now);
}

std::chrono::milliseconds delay_until(std::uint64_t at, std::uint64_t now_ms) {
  // A shard expiring at second E is due once time() reports E.
  std::uint64_t at_ms = at * 1000;
  return std::chrono::milliseconds(at_ms > now_ms ? at_ms - now_ms : 0);
}

}  // namespace dedupd::daemon::expiry
