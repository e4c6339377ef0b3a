// Drains the index's outbox (index/outbox.hpp) into the fleet on its own
// thread: each entry is published or its hold dropped through
// fleet::Writer, and acknowledged in the outbox only after the fleet
// committed it. A crash in between replays the entry, which the fleet takes
// as a no-op (idempotent by shard hash), so every local shard ends up
// published exactly once. The work loop never waits for it: ingest only
// writes the outbox entry, in its own transaction.
//
// It sleeps until the index says a commit queued entries (the daemon's
// index observer posts `wake`), with a slow poll as a safety net. With the
// database down the thread reconnects with backoff (250 ms doubling to
// 30 s), which a wake-up does not cut short; entries wait in the outbox,
// which survives restarts. It also
// carries out fleet expiry and records this host's heartbeat periodically.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

#include "daemon/fleet/state.hpp"
#include "daemon/fleet/wake_fd.hpp"
#include "fleet/fleet.hpp"

namespace dedupd::index {
class Index;
}

namespace dedupd::daemon::fleet_link {

class Publisher {
 public:
  // `wake` is posted when new entries were committed (and by the publisher
  // itself to stop); it outlives the publisher.
  Publisher(index::Index& index, WakeFd& wake, fleet::ConnectOptions options);
  ~Publisher();  // stops the thread; what is not acknowledged stays queued
  Publisher(const Publisher&) = delete;
  Publisher& operator=(const Publisher&) = delete;

  // A changed url or host name: drop the connection and connect anew.
  void configure(fleet::ConnectOptions options);
  PublisherState state() const;

  static constexpr auto kExpireEvery = std::chrono::seconds(60);
  static constexpr auto kHeartbeatEvery = std::chrono::seconds(15);
  // Only a safety net: commits that queue entries wake the publisher.
  static constexpr auto kPoll = std::chrono::seconds(30);
  static constexpr std::size_t kBatch = 64;  // entries read (and acknowledged) at a time

 private:
  void run();
  bool connect();
  // Publishes or drops what the outbox holds; false when a fleet call failed.
  bool drain();
  bool periodic();
  void failed(const fleet::Error& e, const char* doing);
  void succeeded();
  bool interrupted() const;  // stopping, or new settings
  // Until woken (new entries), at most d.
  void wait(std::chrono::steady_clock::duration d);
  // backoff_ whatever is woken, unless interrupted.
  void back_off();

  index::Index& index_;
  WakeFd& wake_;
  mutable std::mutex mu_;
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
