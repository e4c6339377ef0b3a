// Looks after the Xet client caches of `manage: xet-cache` watch entries
// (dedupd.yaml(5)): merges many small shards of each shard-cache/ into few
// (xetcache/), deletes what a merge replaced once no client process can
// still read it, and keeps each cache under its byte and chunk-entry caps,
// all the time rather than at the client's session start.
//
// It acts in a directory that users and running clients own, so every
// deletion follows xetcache/rules.hpp (written out in daemon/README.md):
// only files the index took, unchanged, of shards no admin removed (live, or expired for the caps);
// a merge's originals only while their merged file verifies; and only when
// no client that could have loaded them is alive, or replaced_grace has
// passed on a monotonic clock. When it cannot tell which clients are alive
// it assumes they all are. The one other file it deletes is a temporary of
// its own (".dedupd-*.mdb_temp") that a killed merge left: never loaded,
// never journaled. One failing group, file or directory is set
// aside with backoff and everything else goes on. Pending deletions are
// journaled in the state dir; a lock file in each cache root keeps a second
// dedupd (another instance, another host on NFS) standing by.
//
// A pass runs in a worker thread of its own (start_pass): a first pass over
// a large cache on a slow disk reads every shard, and on the work loop it
// would hold up ingest and the watchdog. It only reads the index (as the
// HTTP threads do) and writes files the watcher then ingests on the loop.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "daemon/config/config.hpp"
#include "daemon/core/status.hpp"
#include "daemon/xetcache/cache_lock.hpp"
#include "daemon/xetcache/endpoint_state.hpp"
#include "daemon/xetcache/liveness.hpp"
#include "daemon/xetcache/probes.hpp"
#include "index/index.hpp"
#include "xetcache/layout.hpp"
#include "xetcache/plan.hpp"

namespace dedupd::daemon::xetcache {

struct StewardProbes {
  StewardClock* clock = &system_steward_clock();
  ProcessTable* processes = &system_process_table();
  StewardFiles* files = &system_steward_files();
};

struct StewardOptions {
  // Where the journal of pending deletions lives (the daemon's state_dir).
  std::string state_dir;
  dedupd::xetcache::ConsolidationPolicy consolidation{};
  // A failing file or group waits 1, 2, 4, ... times this before it is
  // tried again, at most backoff_max_s.
  std::uint64_t backoff_base_s = 60;
  std::uint64_t backoff_max_s = 24 * 3600;
};

class CacheSteward {
 public:
  CacheSteward(const index::Index& index, StewardOptions options, StewardProbes probes = {});
  ~CacheSteward();
  CacheSteward(const CacheSteward&) = delete;
  CacheSteward& operator=(const CacheSteward&) = delete;

  // Any thread; a pass under way finishes with the configuration it began with.
  void configure(std::vector<std::filesystem::path> roots, const config::XetCacheConfig& config);
  bool any() const { return any_; }

  // One pass over every managed cache: deletes replaced originals the rules
  // let go, merges at most one group per cache (skipping groups held back),
  // evicts past the caps. Returns true when it wrote or deleted a file.
  // Runs in the caller's thread (tests); start_pass runs it in the worker.
  bool run();
  // Starts a pass in the worker unless one is under way (then false).
  bool start_pass();
  bool pass_running() const { return running_; }
  // Asks a pass under way to end at its next file (nothing half done: a
  // merge is written and journaled whole or not at all); stop() also waits.
  void request_stop() { stop_ = true; }
  void stop();
  // Waits for a pass under way to end by itself.
  void wait_pass() {
    if (worker_.joinable()) worker_.join();
  }

  // Any thread.
  std::vector<core::XetCacheStatus> status() const;

  // Any thread: a dry run of the next pass over the caches under `root`
  // (all when empty). Files are read and merges computed as in a pass, but
  // nothing is written, deleted or remembered. Nullopt while a pass runs.
  std::optional<std::vector<core::XetCachePlan>> plan(const std::string& root);

 private:
  void apply_configuration();
  bool run_roots();
  bool run_endpoint(ClientSightings& clients, const std::string& dir, const std::string& shard_cache,
                    std::optional<dedupd::xetcache::Error> layout_problem);
  void load_journal();
  void save_journal();
  // Between files: counts them for the status and ends the pass when asked.
  void progress();

  // During a dry run (plan): the file layer only pretends, and what a pass
  // would publish and do goes here instead.
  bool dry_run_ = false;
  std::map<std::string, std::vector<core::XetCachePlanStep>> dry_steps_;  // by endpoint
  std::vector<core::XetCacheStatus> dry_published_;

  const index::Index& index_;
  StewardOptions options_;
  StewardProbes probes_;
  std::mutex run_mu_;  // one pass at a time, whichever thread runs it
  mutable std::mutex config_mu_;
  std::vector<std::filesystem::path> next_roots_;  // under config_mu_, taken by the next pass
  config::XetCacheConfig next_config_;
  bool reconfigured_ = false;
  std::atomic<bool> any_{false};
  std::vector<std::filesystem::path> roots_;  // the pass's own copy
  config::XetCacheConfig config_;
  std::thread worker_;
  std::atomic<bool> running_{false};
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> files_read_{0};          // by the pass under way
  std::map<std::string, CacheLock> locks_;            // by root; a dry run keeps what it took
  std::map<std::string, ClientSightings> sightings_;  // by root
  std::map<std::string, EndpointState> endpoints_;    // by endpoint dir
  bool journal_loaded_ = false;
  bool journal_dirty_ = false;
  mutable std::mutex status_mu_;
  std::vector<core::XetCacheStatus> published_;
};

}  // namespace dedupd::daemon::xetcache
