// The running service: opens the index, watches, ingests, expires, and
// talks to systemd; a Frontend (daemon/core/frontend.hpp, the HTTP one from main)
// serves the socket. One work thread (the caller of run()) does every index
// write; HTTP threads read the index directly and post the admin actions of
// Operations to the work loop.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>

#include "daemon/config/config.hpp"
#include "daemon/core/counters.hpp"
#include "daemon/core/frontend.hpp"
#include "daemon/core/index_log.hpp"
#include "daemon/core/operations.hpp"
#include "daemon/core/status.hpp"
#include "daemon/expiry/runner.hpp"
#include "daemon/filter_builder.hpp"
#include "daemon/fleet/lookup.hpp"
#include "daemon/fleet/publisher.hpp"
#include "daemon/ingest/ingester.hpp"
#include "daemon/ingest/waiting.hpp"
#include "daemon/keys/global_dedup_key.hpp"
#include "daemon/learn/learner.hpp"
#include "daemon/loop/event_loop.hpp"
#include "daemon/loop/signals.hpp"
#include "daemon/loop/timer.hpp"
#include "daemon/watch/watcher.hpp"
#include "daemon/xetcache/steward.hpp"
#include "index/index.hpp"

namespace dedupd::daemon {

struct DaemonOptions {
  Config config;
  // Re-read on SIGHUP; nullopt when running on local defaults.
  std::optional<std::filesystem::path> config_file;
  // Local trial: create the watched directories (an installed service
  // must not create directories it was not given).
  bool create_watch_dirs = false;
};

class Daemon final : public Operations {
 public:
  // `frontend` serves the socket; it outlives the Daemon.
  Daemon(DaemonOptions options, Frontend& frontend);
  ~Daemon() override;
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Runs until SIGTERM/SIGINT; returns the process exit code.
  int run();
  // run() ended because the index must be rebuilt (the scrub found damage,
  // or an operator asked): main starts dedupd again in this process
  // (execv), and the start moves the index aside and rebuilds it.
  bool restart_requested() const { return restart_for_rebuild_; }

  // Damage found while running: the index is marked (a file beside its
  // data), and run() ends for main to start dedupd again.
  void request_rebuild(const std::string& why);
  // The file that marks an index to be moved aside at the next start.
  static constexpr const char* kDamagedMark = "dedupd-damaged";

  // ---- Operations -------------------------------------------------------------
  StatusInfo status() const override;
  GlobalDedupKey global_dedup_key() const override;
  std::chrono::milliseconds admin_timeout() const override;
  bool index_rebuilding() const override { return rebuilding_.load(std::memory_order_relaxed); }
  // CacheSteward::plan.
  std::optional<std::vector<XetCachePlan>> xet_cache_plan(const std::string& root) override {
    if (!steward_) return std::vector<XetCachePlan>{};
    return steward_->plan(root);
  }
  bool fleet_enabled() const override;
  bool fleet_set_aside(const shard::Hash& shard, const std::optional<std::string>& cas) const override;
  fleet::ConnectOptions fleet_options() const override;
  std::optional<fleet_link::PublisherState> fleet_state() const override;
  // Parked outbox entries queued again.
  shard::Result<std::uint64_t> fleet_retry() override;
  RescanResult rescan() override;
  shard::Result<ReloadResult> reload_config() override;
  shard::Result<IndexHealth> rebuild_index() override;
  shard::Result<PurgeResult> purge(bool dry_run) override;
  shard::Result<index::RemoveOutcome> remove(const shard::Hash& shard) override;
  shard::Result<std::optional<index::ShardInfo>> restore(const shard::Hash& shard) override;
  UploadResult ingest_upload(const std::vector<std::uint8_t>& bytes, const std::string& name) override;

 private:
  bool open_index();
  // A damaged index (start-up checks, or LMDB's own complaint on opening)
  // is renamed beside itself and a new one started; false when it cannot be.
  bool move_damaged_index_aside(const std::string& damage);
  void note_rebuild_progress();
  void scrub_step();
  bool take_activated_sockets();
  bool start_server();
  void on_signals();
  void on_watch_events();
  void on_timer();
  // Applies `next`; after the first time, returns what it keeps as it runs
  // until a restart ("key (stays VALUE)"), each also logged.
  std::vector<std::string> apply_config(const Config& next, bool initial);
  void apply_fleet(bool initial);
  void queue(std::vector<Candidate> files);
  void process_pending(std::chrono::milliseconds budget);
  FileOutcome ingest_one(const Candidate& c);
  void retry_waiting();
  void expiry_pass();
  void steward_pass_if_due();
  void rearm_timer();
  void ping_watchdog_if_due();
  void publish_status(bool force);
  std::string status_line() const;
  fleet_link::ReconcileOptions reconcile_options() const;

  DaemonOptions options_;
  Frontend& frontend_;
  bool serving_ = false;             // frontend_ started, so stopped when we stop
  mutable std::mutex config_mutex_;  // guards options_.config for status()
  Config config_;                    // the live config (loop thread)

  Counters counters_;
  EventLoop loop_;
  SignalFd signals_;
  Timer timer_;
  Watcher watcher_;
  // Posted by the index when a commit queued outbox entries, waited on by
  // the publisher (whichever one SIGHUP left running): outlives both.
  fleet_link::WakeFd outbox_wake_;
  IndexLog index_log_{outbox_wake_};  // outlives index_
  std::unique_ptr<index::Index> index_;
  std::atomic<const index::Index*> index_ready_{nullptr};
  std::unique_ptr<FilterBuilder> filter_builder_;  // after index_: stops first
  std::unique_ptr<Ingester> ingester_;
  CasScopes cas_scopes_;  // which CAS a shard found at a path belongs to
  std::unique_ptr<learn::Learner> learner_;
  learn::LearnedCopies learned_copies_;  // state_dir/learned
  std::unique_ptr<expiry::Runner> expiry_;
  std::unique_ptr<CacheSteward> steward_;  // the managed Xet caches
  std::unique_ptr<GlobalDedupKeyStore> key_store_;
  // The fleet: the lookup side outlives the frontend's serving; the publisher
  // (under fleet_mu_, replaced on SIGHUP) stops before the index closes.
  std::unique_ptr<fleet_link::FleetLookup> fleet_lookup_;
  mutable std::mutex fleet_mu_;
  std::unique_ptr<fleet_link::Publisher> publisher_;
  // The fleet's set-aside marks, kept across publishers (a reload makes a
  // new one) for lookups to read.
  const std::shared_ptr<fleet_link::SetAsideMarks> fleet_marks_ = std::make_shared<fleet_link::SetAsideMarks>();

  std::deque<Candidate> pending_;
  std::unordered_set<std::string> pending_paths_;  // no file queued twice
  WaitingFiles waiting_;                           // failed for a reason that passes
  std::atomic<bool> rebuilding_{false};
  mutable std::mutex health_mu_;
  IndexHealth health_;  // under health_mu_
  std::chrono::steady_clock::time_point next_space_check_;
  std::optional<std::uint64_t> last_free_bytes_;  // state_dir's, at the last check
  bool stopping_ = false;
  bool restart_for_rebuild_ = false;
  std::optional<std::chrono::steady_clock::time_point> restart_due_;
  // What systemd passed (dedupd.socket): taken at start, before the
  // learner listens and the server starts.
  int activated_api_ = -1, activated_learn_ = -1;
  // The scrub: where it is, when its next slice and pass may run.
  index::Index::ScrubPosition scrub_pos_;
  bool start_queue_drained_ = false;
  std::chrono::steady_clock::time_point next_scrub_slice_;
  std::optional<std::chrono::steady_clock::time_point> next_scrub_pass_;
  bool expiry_pass_wanted_ = false;
  bool timer_rearm_wanted_ = false;
  std::uint64_t next_safety_scan_ = 0;
  std::uint64_t next_steward_pass_ = 0;
  std::chrono::steady_clock::time_point started_;
  std::optional<std::chrono::microseconds> watchdog_interval_;
  std::chrono::steady_clock::time_point next_watchdog_;
  std::chrono::steady_clock::time_point next_status_;
  std::string last_status_;
};

}  // namespace dedupd::daemon
