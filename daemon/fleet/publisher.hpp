// Drains the index's outbox (index/outbox.hpp) into the fleet on its own
// thread: each entry is published or its hold dropped through
// fleet::Writer, and acknowledged in the outbox only after the fleet
// committed it. A crash in between replays the entry, which the fleet takes
// as a no-op (idempotent by shard hash), so every local shard ends up
// published exactly once. The work loop never waits for it: ingest only
// writes the outbox entry, in its own transaction.
//
// With the database down the thread reconnects with backoff (250 ms doubling
// to 30 s); entries wait in the outbox, which survives restarts. It also
// carries out fleet expiry and records this host's heartbeat periodically.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

#include "daemon/fleet/state.hpp"
#include "fleet/fleet.hpp"

namespace dedupd::index {
class Index;
}

namespace dedupd::daemon::fleet_link {

class Publisher {
 public:
  Publisher(index::Index& index, fleet::ConnectOptions options);
  ~Publisher();  // stops the thread; what is not acknowledged stays queued
  Publisher(const Publisher&) = delete;
  Publisher& operator=(const Publisher&) = delete;

  // A changed url or host name: drop the connection and connect anew.
  void configure(fleet::ConnectOptions options);
  // New entries were queued: drain now rather than at the next poll.
  void wake();
  PublisherState state() const;

  static constexpr auto kExpireEvery = std::chrono::seconds(60);
  static constexpr auto kHeartbeatEvery = std::chrono::seconds(15);
  static constexpr auto kPoll = std::chrono::seconds(1);
  static constexpr std::size_t kBatch = 64;  // entries read (and acknowledged) at a time

 private:
  void run();
  bool connect();
  // Publishes or drops what the outbox holds; false when a fleet call failed.
  bool drain();
  bool periodic();
  void failed(const fleet::Error& e, const char* doing);
  void succeeded();
  void wait(std::chrono::steady_clock::duration d);

  index::Index& index_;
  mutable std::mutex mu_;
  // Waits are poll() on an eventfd with a relative timeout, not a condition
  // variable: under libfaketime (the expiry tests) a timed wait on an
  // absolute instant can sleep for the whole faked offset.
  int wake_fd_ = -1;
  fleet::ConnectOptions options_;  // under mu_
  bool reconfigured_ = false;      // under mu_
  bool stopping_ = false;          // under mu_
  PublisherState state_;           // under mu_ (outbox fields filled by state())

  // The thread's own.
  std::unique_ptr<fleet::Writer> writer_;
  std::chrono::milliseconds backoff_{0};
  std::chrono::steady_clock::time_point next_expire_{}, next_heartbeat_{};
  std::thread thread_;
};

}  // namespace dedupd::daemon::fleet_link
