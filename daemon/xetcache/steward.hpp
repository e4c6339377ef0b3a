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
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "daemon/config/config.hpp"
#include "daemon/status.hpp"
#include "daemon/xetcache/probes.hpp"
#include "index/index.hpp"
#include "xetcache/plan.hpp"
#include "xetcache/rules.hpp"
#include "xetcache/shards.hpp"

namespace dedupd::daemon {

struct StewardProbes {
  StewardClock* clock = &system_steward_clock();
  ProcessTable* processes = &system_process_table();
  StewardFiles* files = &system_steward_files();
};

struct StewardOptions {
  // Where the journal of pending deletions lives (the daemon's state_dir).
  std::string state_dir;
  xetcache::ConsolidationPolicy consolidation{};
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
  void configure(std::vector<std::filesystem::path> roots, const XetCacheConfig& config);
  bool any() const { return any_; }

  // One pass over every managed cache: deletes replaced originals the rules
  // let go, merges at most one group per cache (skipping groups set aside),
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
  std::vector<XetCacheStatus> status() const;

  // Any thread: a dry run of the next pass over the caches under `root`
  // (all when empty). Files are read and merges computed as in a pass, but
  // nothing is written, deleted or remembered. Nullopt while a pass runs.
  std::optional<std::vector<XetCachePlan>> plan(const std::string& root);

 private:
  struct Pending {
    std::string original;
    std::string merged;
    std::uint64_t since_mono = 0;  // since when the original is wanted gone
  };
  // A shard file as last described, valid while its size and mtime hold:
  // a pass then parses only the files that are new or changed.
  struct Described {
    std::uint64_t size = 0;
    std::int64_t mtime_ns = 0;
    xetcache::ShardDesc desc;
  };
  struct SetAside {
    std::uint32_t failures = 0;
    std::uint64_t until_mono = 0;
    std::string reason;
  };
  struct EndpointState {
    XetCacheStatus status;
    std::vector<Pending> pending;                      // originals of merges, still on disk
    std::map<std::string, std::uint64_t> evicting;     // path -> since when the caps want it gone (monotonic)
    std::map<std::string, Described> described;        // by path
    std::map<std::string, SetAside> set_aside;         // by file path, or "group:" + member paths
    std::map<std::string, std::string> holds_removed;  // merged file -> an admin-removed original it holds
  };
  struct RootState {
    int lock_fd = -1;
    bool holds_lock = false;
    std::string lock_holder;  // who holds it, when another does
    xetcache::LivenessVerdict liveness;
    std::vector<std::int64_t> clients;
    // Log name -> the start ticks of the process first seen running under
    // its pid: the same ticks later are the same process whatever the wall
    // clock did since; other ticks are a reused pid.
    std::map<std::string, std::uint64_t> sighted;
    std::set<std::string> ever_running;  // log names whose pid this steward saw as the client
    // Log name -> (mtime, size) at the last pass: a log of a pid not running
    // here that still grows is a client this steward cannot see.
    std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> log_marks;
  };
  // taken: the index took the file and its shard is live or expired (the caps
  // may still want an expired one gone when dedupd's own expiry keeps files).
  enum class FileState : std::uint8_t { not_ours, taken, removed };
  struct FileFacts {
    FileState state = FileState::not_ours;
    bool unchanged = false;
  };

  void apply_configuration();
  bool run_roots();
  bool run_endpoint(RootState& root, const std::string& dir, const std::string& shard_cache,
                    std::optional<xetcache::Error> layout_problem);
  bool take_lock(const std::filesystem::path& root, RootState& state);
  void judge_clients(const std::filesystem::path& root, RootState& state);
  FileFacts facts_of(const std::string& path) const;
  // The merged file is there, is what its name says and parses.
  bool merged_verifies(const std::string& path);
  bool try_merge(EndpointState& ep, const std::string& shard_cache, const std::vector<std::string>& members,
                 std::uint64_t now_mono);
  void set_aside(EndpointState& ep, const std::string& key, std::string reason, std::uint64_t now_mono);
  bool is_set_aside(const EndpointState& ep, const std::string& key, std::uint64_t now_mono) const;
  void load_journal();
  void save_journal();
  // Between files: counts them for the status and ends the pass when asked.
  void progress();

  // During a dry run (plan): the file layer only pretends, and what a pass
  // would publish and do goes here instead.
  bool dry_run_ = false;
  std::map<std::string, std::vector<XetCachePlanStep>> dry_steps_;  // by endpoint
  std::vector<XetCacheStatus> dry_published_;

  const index::Index& index_;
  StewardOptions options_;
  StewardProbes probes_;
  std::mutex run_mu_;  // one pass at a time, whichever thread runs it
  mutable std::mutex config_mu_;
  std::vector<std::filesystem::path> next_roots_;  // under config_mu_, taken by the next pass
  XetCacheConfig next_config_;
  bool reconfigured_ = false;
  std::atomic<bool> any_{false};
  std::vector<std::filesystem::path> roots_;  // the pass's own copy
  XetCacheConfig config_;
  std::thread worker_;
  std::atomic<bool> running_{false};
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> files_read_{0};        // by the pass under way
  std::map<std::string, RootState> root_states_;    // by root
  std::map<std::string, EndpointState> endpoints_;  // by endpoint dir
  bool journal_loaded_ = false;
  bool journal_dirty_ = false;
  mutable std::mutex status_mu_;
  std::vector<XetCacheStatus> published_;
};

}  // namespace dedupd::daemon
