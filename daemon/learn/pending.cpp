#include "daemon/learn/pending.hpp"

namespace dedupd::daemon::learn {

// nginx's status for a request whose client hung up before the answer
// (its log writes 499 where no status was sent): the CAS said nothing.
constexpr unsigned kClientClosed = 499;

Settled PendingShards::settle(Pending p, unsigned status) {
  Settled s;
  if (status >= 200 && status < 300) {
    s.kind = Settled::Kind::accepted;
    ++stats_.accepted;
  } else if (status >= 400 && status < 500 && status != kClientClosed) {
    s.kind = Settled::Kind::refused;
    ++stats_.refused;
  } else {
    s.kind = Settled::Kind::failed;
    ++stats_.failed;
  }
  if (s.kind != Settled::Kind::failed) s.pending = std::move(p);
  return s;
}

bool PendingShards::hold(const std::string& id, Pending p, Clock::time_point now, std::optional<Settled>& settled) {
  std::lock_guard lock(mu_);
  settled.reset();
  if (settled_.contains(id) || bodies_.contains(id)) {
    settled = Settled{Settled::Kind::duplicate, std::nullopt};
    return false;
  }
  if (auto e = early_.find(id); e != early_.end()) {
    unsigned status = e->second.first;
    early_.erase(e);
    settled_.emplace(id, now);
    settled = settle(std::move(p), status);
    return true;
  }
  if (stats_.held_bytes + p.bytes.size() > max_bytes_) {
    ++stats_.dropped_full;
    return false;
  }
  stats_.held_bytes += p.bytes.size();
  ++stats_.held;
  bodies_.emplace(id, Body{std::move(p), now});
  return true;
}

Settled PendingShards::confirm(const std::string& id, unsigned status, Clock::time_point now) {
  std::lock_guard lock(mu_);
  if (auto b = bodies_.find(id); b != bodies_.end()) {
    Pending p = std::move(b->second.p);
    stats_.held_bytes -= p.bytes.size();
    --stats_.held;
    bodies_.erase(b);
    settled_.emplace(id, now);
    return settle(std::move(p), status);
  }
  if (settled_.contains(id) || early_.contains(id)) return {Settled::Kind::duplicate, std::nullopt};
  // nginx writes the log line once the mirrored body is answered, so this
  // is rare (a body dedupd did not hold, a confirmation for nothing): kept
  // a while in case its body is on its way.
  ++stats_.unmatched;
  early_.emplace(id, std::make_pair(status, now));
  return {Settled::Kind::early, std::nullopt};
}

std::size_t PendingShards::expire(Clock::time_point now) {
  std::lock_guard lock(mu_);
  std::size_t n = 0;
  for (auto it = bodies_.begin(); it != bodies_.end();) {
    if (now - it->second.at < ttl_) {
      ++it;
      continue;
    }
    stats_.held_bytes -= it->second.p.bytes.size();
    --stats_.held;
    ++stats_.expired;
    ++n;
    it = bodies_.erase(it);
  }
  std::erase_if(early_, [&](const auto& e) { return now - e.second.second >= ttl_; });
  std::erase_if(settled_, [&](const auto& e) { return now - e.second >= ttl_; });
  return n;
}

PendingStats PendingShards::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace dedupd::daemon::learn
