// The running service: opens the index, listens, watches, ingests, expires,
// and talks to systemd. One work thread (the caller of run()) does every
// index write; HTTP threads read the index directly and post admin actions
// to the work loop through ServiceImpl.
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
#include "daemon/counters.hpp"
#include "daemon/expiry/runner.hpp"
#include "daemon/filter_builder.hpp"
#include "daemon/fleet/lookup.hpp"
#include "daemon/fleet/publisher.hpp"
#include "daemon/index_log.hpp"
#include "daemon/ingest/ingester.hpp"
#include "daemon/keys/global_dedup_key.hpp"
#include "daemon/learn/learner.hpp"
#include "daemon/loop/event_loop.hpp"
#include "daemon/loop/signals.hpp"
#include "daemon/loop/timer.hpp"
#include "daemon/status.hpp"
#include "daemon/watch/watcher.hpp"
#include "daemon/xetcache/steward.hpp"
#include "index/index.hpp"

namespace dedupd::daemon {

class ApiServer;
class ServiceImpl;

struct DaemonOptions {
  Config config;
  // Re-read on SIGHUP; nullopt when running on local defaults.
  std::optional<std::filesystem::path> config_file;
  // Local trial: create the watched directories (an installed service
  // must not create directories it was not given).
  bool create_watch_dirs = false;
};

class Daemon {
 public:
  explicit Daemon(DaemonOptions options);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Runs until SIGTERM/SIGINT; returns the process exit code.
  int run();

  // ---- for ServiceImpl ------------------------------------------------------
  // Any thread.
  EventLoop& loop() { return loop_; }
  const index::Index* index() const { return index_ready_.load(); }
  StatusInfo status() const;
  DaemonCounters counters() const { return counters_.snapshot(); }
  GlobalDedupKey global_dedup_key() const;
  std::chrono::milliseconds admin_timeout() const;
  // Loop thread only.
  RescanResult rescan();
  shard::Result<PurgeResult> purge(bool dry_run);
  // Any thread: CacheSteward::plan.
  std::optional<std::vector<XetCachePlan>> xet_cache_plan(const std::string& root) {
    if (!steward_) return std::vector<XetCachePlan>{};
    return steward_->plan(root);
  }
  shard::Result<index::RemoveOutcome> remove(const shard::Hash& shard);
  shard::Result<std::optional<index::ShardInfo>> restore(const shard::Hash& shard);
  UploadResult ingest_upload(const std::vector<std::uint8_t>& bytes, const std::string& name);
  learn::Learner* learner() { return learner_.get(); }
  const learn::Learner* learner() const { return learner_.get(); }
  // The fleet: the lookup side (any thread; off without a fleet) and the
  // publisher's state (nullopt without a fleet).
  fleet_link::FleetLookup& fleet_lookup() { return *fleet_lookup_; }
  std::optional<fleet_link::PublisherState> fleet_state() const;
  // Parked outbox entries queued again (any thread); "daemon.no_fleet" without a fleet.
  shard::Result<std::uint64_t> fleet_retry();
  bool fleet_enabled() const;
  fleet::ConnectOptions fleet_options() const;
  fleet_link::ReconcileOptions reconcile_options() const;

 private:
  bool open_index();
  bool start_server();
  void on_signals();
  void on_watch_events();
  void on_timer();
  void reload();
  void apply_config(const Config& next, bool initial);
  void apply_fleet(bool initial);
  void queue(std::vector<Candidate> files);
  void process_pending(std::chrono::milliseconds budget);
  FileOutcome ingest_one(const Candidate& c);
  void expiry_pass();
  void steward_pass_if_due();
  void rearm_timer();
  void ping_watchdog_if_due();
  void publish_status(bool force);
  std::string status_line() const;

  DaemonOptions options_;
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
  std::unique_ptr<expiry::Runner> expiry_;
  std::unique_ptr<CacheSteward> steward_;  // the managed Xet caches
  std::unique_ptr<GlobalDedupKeyStore> key_store_;
  // The fleet: the lookup side lives as long as the server; the publisher
  // (under fleet_mu_, replaced on SIGHUP) stops before the index closes.
  std::unique_ptr<fleet_link::FleetLookup> fleet_lookup_;
  mutable std::mutex fleet_mu_;
  std::unique_ptr<fleet_link::Publisher> publisher_;
  std::unique_ptr<ServiceImpl> service_;
  std::unique_ptr<ApiServer> server_;

  std::deque<Candidate> pending_;
  std::unordered_set<std::string> pending_paths_;  // no file queued twice
  bool stopping_ = false;
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
