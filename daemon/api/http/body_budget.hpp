// Request and answer bodies held at once, all connections together.
// Queries may use only what is left after room for one upload of the
// largest size, so an upload always fits and callers without admin rights
// (who can send queries, not uploads) can never hold more than that rest.
#pragma once

#include <atomic>
#include <cstdint>

#include "daemon/api/http/router.hpp"

namespace dedupd::daemon::api::http {

class BodyBudget {
 public:
  BodyBudget(std::uint64_t total, std::uint64_t upload_room)
      : upload_cap_(total), query_cap_(total > upload_room ? total - upload_room : 0) {}

  bool fits(Body kind, std::uint64_t n) const { return held_.load() + n <= cap(kind); }
  bool take(Body kind, std::uint64_t n) {
    std::uint64_t cur = held_.load();
    do {
      if (cur + n > cap(kind)) return false;
    } while (!held_.compare_exchange_weak(cur, cur + n));
    return true;
  }
  void give(std::uint64_t n) { held_ -= n; }
  std::uint64_t cap(Body kind) const { return kind == Body::upload ? upload_cap_ : query_cap_; }

 private:
  std::atomic<std::uint64_t> held_{0};
  std::uint64_t upload_cap_, query_cap_;
};

}  // namespace dedupd::daemon::api::http
