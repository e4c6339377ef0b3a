// Shards the local Xet endpoint saw a client upload, held until the CAS's
// answer to that upload is known: nginx mirrors each
// POST /v2/shards body to dedupd (held here by nginx's request id), and
// reports the status the CAS gave it on the learning socket
// (confirm_socket.hpp). Only a shard the CAS accepted (a 2xx) is learned;
// one it refused tells which answers went stale (heal.hpp); one never
// confirmed is dropped after a while. Memory is bounded: a body that would
// pass the cap is not held (that shard is simply not learned).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dedupd::daemon::learn {

struct Pending {
  std::vector<std::uint8_t> bytes;
  std::string cas;  // normalized: the CAS the endpoint sent it to
};

// What a confirmation settled.
struct Settled {
  enum class Kind : std::uint8_t {
    accepted,   // the CAS took it: learn `pending`
    refused,    // the CAS refused it (4xx): `pending` may name stale answers
    failed,     // the CAS failed (5xx, or nginx could not reach it): forget it
    early,      // no body yet: kept a while, settled when the body comes
    duplicate,  // this id was settled already
  };
  Kind kind = Kind::failed;
  std::optional<Pending> pending{};
};

struct PendingStats {
  std::uint64_t held = 0, held_bytes = 0;
  std::uint64_t accepted = 0, refused = 0, failed = 0, expired = 0, dropped_full = 0, unmatched = 0;
};

class PendingShards {
 public:
  using Clock = std::chrono::steady_clock;
  // `max_bytes`: the bodies held at once; `ttl`: how long a body waits for
  // its confirmation, or a confirmation for its body.
  explicit PendingShards(std::uint64_t max_bytes = 256ull << 20, std::chrono::seconds ttl = std::chrono::minutes(10))
      : max_bytes_(max_bytes), ttl_(ttl) {}

  // A body nginx mirrored. False when it does not fit (not held). When its
  // confirmation came first, the body is settled at once: `settled` says how.
  bool hold(const std::string& id, Pending p, Clock::time_point now, std::optional<Settled>& settled);
  // The CAS's status for request `id`.
  Settled confirm(const std::string& id, unsigned status, Clock::time_point now);
  // Drops what waited past the ttl; returns how many.
  std::size_t expire(Clock::time_point now);
  PendingStats stats() const;

 private:
  Settled settle(Pending p, unsigned status);
  std::uint64_t max_bytes_;
  std::chrono::seconds ttl_;
  mutable std::mutex mu_;  // HTTP threads hold, the work loop confirms
  struct Body {
    Pending p;
    Clock::time_point at;
  };
  std::map<std::string, Body> bodies_;
  std::map<std::string, std::pair<unsigned, Clock::time_point>> early_;  // status before its body
  std::map<std::string, Clock::time_point> settled_;                     // ids done, for duplicates
  PendingStats stats_;
};

}  // namespace dedupd::daemon::learn
