// How long a call waits on the fleet database, and the one way a wait may
// go past its bound: a database that is working is not a database that is
// down. `at` bounds the wait for a server that does not answer. A call
// given `patience` (a pool's evidence of its server: when a statement or a
// ping last came back) still waiting at `at` waits on while the server
// answered within the patience's silence bound, and never past `cap`: the
// lookup of a large block on a busy host takes what its work takes, while a
// stopped or unreachable server still ends the wait one silence after it
// last answered.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>

namespace dedupd::fleet {

class Patience {
 public:
  using Clock = std::chrono::steady_clock;
  explicit Patience(std::chrono::milliseconds silence) : silence_ns_(ns(silence)) {}

  // The server answered (a statement or a ping came back) at `t`. Any thread.
  void answered(Clock::time_point t = Clock::now()) {
    const std::int64_t v = t.time_since_epoch().count();
    std::int64_t seen = last_.load(std::memory_order_relaxed);
    while (seen < v && !last_.compare_exchange_weak(seen, v, std::memory_order_relaxed)) {
    }
  }
  void set_silence(std::chrono::milliseconds silence) { silence_ns_.store(ns(silence), std::memory_order_relaxed); }
  // Until when the server counts as answering: its last answer plus the
  // silence bound (the epoch when it never answered).
  Clock::time_point answering_until() const {
    const std::int64_t last = last_.load(std::memory_order_relaxed);
    if (last == kNever) return {};
    return Clock::time_point(Clock::duration(last + silence_ns_.load(std::memory_order_relaxed)));
  }
  bool answering(Clock::time_point now = Clock::now()) const { return now < answering_until(); }

 private:
  static constexpr std::int64_t kNever = 0;
  static std::int64_t ns(std::chrono::milliseconds d) { return std::chrono::duration_cast<Clock::duration>(d).count(); }
  std::atomic<std::int64_t> last_{kNever};
  std::atomic<std::int64_t> silence_ns_;
};

struct Deadline {
  using Clock = std::chrono::steady_clock;
  Clock::time_point at{};
  const Patience* patience = nullptr;  // null: `at` is the end
  Clock::time_point cap{};             // with patience: the end however well the server answers

  Deadline() = default;
  // A bare bound. Implicit: every call that takes a time point takes a Deadline.
  Deadline(Clock::time_point bound) : at(bound) {}  // NOLINT(google-explicit-constructor): a bare bound
  static Deadline in(std::chrono::milliseconds d) { return {Clock::now() + d}; }
  // `d` for a server that does not answer; up to `work` (from now) while `p`
  // says it does.
  static Deadline patient(std::chrono::milliseconds d, const Patience& p, std::chrono::milliseconds work) {
    Deadline out = in(d);
    out.patience = &p;
    out.cap = std::max(out.at, Clock::now() + work);
    return out;
  }
  // When the wait ends, as the evidence stands at this instant.
  Clock::time_point end() const {
    if (!patience) return at;
    return std::max(at, std::min(cap, patience->answering_until()));
  }
};

}  // namespace dedupd::fleet
