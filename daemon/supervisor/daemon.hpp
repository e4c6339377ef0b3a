// The running service: starts (opens the index, builds its parts, starts
// the Frontend that serves the socket, READY=1), runs the work loop until
// SIGTERM, reloads on SIGHUP, and stops. The loop's work is done by jobs
// (daemon/jobs/) that one scheduler runs between the loop's events;
// daemon/supervisor/parts.hpp lists them. One work thread (the caller of
// run()) does every index write; HTTP threads read the index directly and
// post the admin actions of Operations to the work loop.
#pragma once

#include <atomic>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/config/config.hpp"
#include "daemon/core/counters.hpp"
#include "daemon/core/frontend.hpp"
#include "daemon/core/index_health_board.hpp"
#include "daemon/fleet_link/wake_fd.hpp"
#include "daemon/ingest/cas_scope.hpp"
#include "daemon/learn/copies.hpp"
#include "daemon/loop/event_loop.hpp"
#include "daemon/loop/signals.hpp"
#include "daemon/supervisor/daemon_operations.hpp"
#include "daemon/supervisor/index_log.hpp"
#include "daemon/supervisor/live_config.hpp"
#include "daemon/supervisor/parts.hpp"
#include "daemon/watch/watcher.hpp"
#include "index/index.hpp"

namespace dedupd::daemon::supervisor {

struct DaemonOptions {
  config::Config config;
  // Re-read on SIGHUP; nullopt when running on local defaults.
  std::optional<std::filesystem::path> config_file;
  // Local trial: create the watched directories (an installed service
  // must not create directories it was not given).
  bool create_watch_dirs = false;
};

class Daemon final {
 public:
  // `frontend` serves the socket; it outlives the Daemon.
  Daemon(DaemonOptions options, core::Frontend& frontend);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Runs until SIGTERM/SIGINT; returns the process exit code.
  int run();
  // run() ended because the index must be rebuilt (the scrub found damage,
  // or an operator asked): main starts dedupd again in this process
  // (execv), and the start moves the index aside and rebuilds it.
  bool restart_requested() const { return parts_ && parts_->rebuild.requested(); }

 private:
  bool start();
  bool open_index();
  bool start_server(int listen_fd);
  void loop();
  void stop();
  void on_signals();
  void on_watch_events();
  base::Result<core::ReloadResult> reload_config();
  // Applies `next`; on a reload, returns what it keeps as it runs until a
  // restart ("key (stays VALUE)"), each also logged.
  std::vector<std::string> apply_config(const config::Config& next, jobs::Apply when);

  const DaemonOptions options_;
  core::Frontend& frontend_;
  bool serving_ = false;  // frontend_ started, so stopped when we stop
  bool stopping_ = false;
  LiveConfig config_;
  core::Counters counters_;
  loop::EventLoop loop_;
  loop::SignalFd signals_;
  watch::Watcher watcher_;
  // Posted by the index when a commit queued outbox entries, waited on by
  // the fleet's publisher (whichever one a reload left running).
  fleet_link::WakeFd outbox_wake_;
  IndexLog index_log_{outbox_wake_};  // outlives index_
  core::IndexHealthBoard health_;
  ingest::CasScopes cas_scopes_;         // which CAS a shard found at a path belongs to
  learn::LearnedCopies learned_copies_;  // state_dir/learned
  std::unique_ptr<index::Index> index_;
  std::atomic<const index::Index*> index_ready_{nullptr};
  std::unique_ptr<Parts> parts_;  // after index_: gone before it closes
  std::unique_ptr<DaemonOperations> operations_;
};

}  // namespace dedupd::daemon::supervisor
