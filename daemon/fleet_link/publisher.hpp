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
// 2 s while no server takes writes, to 30 s while one refuses statements),
// which a wake-up does not cut short; entries wait in the outbox,
// which survives restarts. An entry the fleet can never take as it is (the
// shard does not rebuild as it was, or the fleet refuses it for what it is)
// is parked in the index with its reason rather than acknowledged, and
// queued again at the next start (a new dedupd may know better) and on
// retry_parked() (`dedupctl fleet retry`). It also
// carries out fleet expiry and records this host's heartbeat periodically.
//
// Anti-entropy: after each connect and then every `reconcile.interval`, once
// the outbox is drained, it compares the shards the fleet lists for this
// host with the live local shards, `reconcile.batch` of each at a time in
// hash order, and queues what differs (publish what the fleet lacks, drop
// holds on what is gone here). That heals what no outbox entry describes: a
// shard an earlier release skipped, a fleet database restored from an older
// backup, an outbox lost with its disk, a host forgotten by mistake.
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "daemon/fleet_link/set_aside_marks.hpp"
#include "daemon/fleet_link/state.hpp"
#include "daemon/fleet_link/wake_fd.hpp"
#include "fleet/fleet.hpp"
#include "index/outbox.hpp"
#include "index/status.hpp"

namespace dedupd::index {
class Index;
}

namespace dedupd::daemon::fleet_link {

struct ReconcileOptions {
  std::chrono::seconds interval{600};
  std::size_t batch = 10000;
  bool operator==(const ReconcileOptions&) const = default;
};

class Publisher {
 public:
  // `wake` is posted when new entries were committed (and by the publisher
  // itself to stop); it outlives the publisher.
  // `marks` is where the fleet's set-aside marks go for lookups to read.
  Publisher(index::Index& index, WakeFd& wake, fleet::ConnectOptions options, ReconcileOptions reconcile = {},
            std::shared_ptr<SetAsideMarks> marks = nullptr);
  ~Publisher();  // stops the thread; what is not acknowledged stays queued
  Publisher(const Publisher&) = delete;
  Publisher& operator=(const Publisher&) = delete;

  // A changed url or host name: drop the connection and connect anew.
  void configure(fleet::ConnectOptions options, ReconcileOptions reconcile = {});
  PublisherState state() const;
  // Queues every parked entry again and wakes the thread; how many.
  index::Result<std::uint64_t> retry_parked();

  // Set-aside marks (publisher_marks.cpp): queued by any thread, sent by
  // the publisher's, in order, retried while the process lives (anti-
  // entropy sends what a restart lost).
  void mark_set_aside(const shard::Hash& shard, std::string cas, std::string reason);
  // Every fleet shard of `cas` (and of no known CAS when `unknown_too`)
  // holding one of `xorbs`: those a refused upload relied on, answered
  // from the fleet rather than from this host's own copies.
  void mark_holders_set_aside(std::vector<shard::Hash> xorbs, std::string cas, bool unknown_too, std::string reason);
  void unmark_set_aside(const shard::Hash& shard);
  // `cas` accepted an upload of this very shard: its mark for that CAS, if
  // the fleet has one, goes (the CAS holds every xorb the shard names), and
  // every host answers with it there again. Without this the copy a host
  // learned would be set aside by the mark another host's refusal left.
  void accepted_again(const shard::Hash& shard, const std::string& cas);
  // How often the marks are read again: how long another host's refusal
  // may still be answered here.
  static constexpr auto kMarksEvery = std::chrono::seconds(2);
  // The reason a set-aside applied from a fleet mark starts with.
  static constexpr const char* kFleetReason = "fleet: ";

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
  // What became of one entry: done (acknowledge it), parked, stuck (it
  // could not be parked: it stays queued, and nothing after it may be
  // acknowledged), failed (the fleet or the index failed: try later).
  enum class Step : std::uint8_t { done, parked, stuck, failed };
  Step handle(const index::OutboxEntry& e);
  bool periodic();
  // One anti-entropy round when one is due and the outbox is drained (`ran`
  // says whether it ran); false when a fleet call failed.
  bool reconcile(bool& ran);
  // Sends queued marks, then reads the fleet's when due and applies them to
  // the index; false when a fleet call failed.
  bool sync_marks();
  void apply_marks(const std::vector<fleet::SetAsideMark>& marks, bool compare_all);
  // Takes `e` out of the queue, into the parked entries, with `why`; false
  // when the index could not (`e` stays queued).
  bool park(const index::OutboxEntry& e, const std::string& why);
  void failed(const fleet::Error& e, const char* doing);
  void succeeded();
  bool interrupted() const;  // stopping, or new settings
  // Until woken (new entries), at most d.
  void wait(std::chrono::steady_clock::duration d);
  // backoff_ whatever is woken, unless interrupted.
  void back_off();

  index::Index& index_;
  WakeFd& wake_;
  // Posted once, at the stop: every wait of the Writer's ends then
  // (fleet::ConnectOptions::interrupt_fd). Not wake_, which each commit
  // posts and which must not cut a statement short.
  WakeFd stop_;
  mutable std::mutex mu_;
  fleet::ConnectOptions options_;  // under mu_
  ReconcileOptions reconcile_;     // under mu_
  bool reconfigured_ = false;      // under mu_
  bool stopping_ = false;          // under mu_
  PublisherState state_;           // under mu_ (outbox fields filled by state())
  struct MarkOp {
    enum class Kind {
      mark,          // mark the shard set aside for cas, saying reason
      mark_holders,  // mark the fleet's shards of cas holding one of xorbs
      unmark_all,    // an admin restored it: every CAS's mark goes
      unmark_one,    // cas accepted its bytes again: that CAS's mark goes
    };
    shard::Hash shard;
    Kind kind = Kind::mark;
    std::string cas, reason;
    std::vector<shard::Hash> xorbs{};  // mark_holders
    bool unknown_too = false;          // mark_holders
  };
  std::deque<MarkOp> mark_ops_;  // under mu_
  std::shared_ptr<SetAsideMarks> marks_;

  // The thread's own.
  std::unique_ptr<fleet::Writer> writer_;
  std::chrono::milliseconds backoff_{0};
  std::chrono::steady_clock::time_point next_expire_{}, next_heartbeat_{}, next_reconcile_{};
  std::optional<shard::Hash> reconcile_after_;  // within a pass: where the next round starts
  bool in_pass_ = false;
  std::chrono::steady_clock::time_point next_marks_{};
  bool marks_compare_due_ = true;      // after a connect and each reconcile pass
  std::set<shard::Hash> last_marked_;  // the shards the last read listed
  std::uint64_t pass_publish_ = 0, pass_drop_ = 0;
  std::thread thread_;
};

}  // namespace dedupd::daemon::fleet_link
