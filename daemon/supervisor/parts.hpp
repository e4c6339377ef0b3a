// What the Daemon runs on its open index, built in the order they depend on
// one another and wired to one another's events: the global-dedup key, the
// Ingester and the queue that feeds it, the learner, the expiry runner, the
// steward, and the jobs of the work loop, added to the scheduler in the
// order their steps run. Destroyed before the index closes, the jobs first
// (the filter builder and the fleet's publisher stop with theirs).
#pragma once

#include <functional>

#include "daemon/config/config.hpp"
#include "daemon/core/counters.hpp"
#include "daemon/core/index_health_board.hpp"
#include "daemon/expiry/runner.hpp"
#include "daemon/fleet_link/wake_fd.hpp"
#include "daemon/ingest/cas_scope.hpp"
#include "daemon/ingest/ingest_queue.hpp"
#include "daemon/ingest/ingester.hpp"
#include "daemon/jobs/download_cache.hpp"
#include "daemon/jobs/expiry.hpp"
#include "daemon/jobs/filter_build.hpp"
#include "daemon/jobs/fleet_link.hpp"
#include "daemon/jobs/ingest.hpp"
#include "daemon/jobs/key_rotation.hpp"
#include "daemon/jobs/rebuild_restart.hpp"
#include "daemon/jobs/safety_scan.hpp"
#include "daemon/jobs/scrub.hpp"
#include "daemon/jobs/steward.hpp"
#include "daemon/jobs/systemd_status.hpp"
#include "daemon/jobs/watchdog.hpp"
#include "daemon/keys/global_dedup_key.hpp"
#include "daemon/learn/copies.hpp"
#include "daemon/learn/learner.hpp"
#include "daemon/loop/event_loop.hpp"
#include "daemon/supervisor/scheduler.hpp"
#include "daemon/watch/watcher.hpp"
#include "daemon/xetcache/steward.hpp"
#include "index/index.hpp"

namespace dedupd::daemon::supervisor {

// What the parts use and the Daemon keeps; all outlive the parts.
struct Ground {
  index::Index& index;
  const config::Config& config;  // as at start
  core::Counters& counters;
  loop::EventLoop& loop;
  watch::Watcher& watcher;
  ingest::CasScopes& cas_scopes;
  learn::LearnedCopies& learned_copies;
  core::IndexHealthBoard& health;
  fleet_link::WakeFd& outbox_wake;
  std::function<void()> stop;  // ends the work loop
};

struct Parts {
  explicit Parts(const Ground& ground);
  Parts(const Parts&) = delete;
  Parts& operator=(const Parts&) = delete;

  keys::GlobalDedupKeyStore keys;  // loaded by the Daemon, which fails the start when it cannot be
  ingest::Ingester ingester;
  learn::Learner learner;
  expiry::Runner expiry_runner;
  xetcache::CacheSteward steward;
  ingest::IngestQueue queue;
  // The jobs, and the one scheduler of their steps.
  jobs::FleetLink fleet;
  jobs::SafetyScanJob safety_scan;
  jobs::KeyRotationJob key_rotation;
  jobs::IngestJob ingest;
  jobs::FilterBuildJob filter_build;
  jobs::ScrubJob scrub;
  jobs::RebuildRestart rebuild;
  jobs::ExpiryJob expiry;
  jobs::StewardJob steward_passes;
  jobs::DownloadCacheJob download_cache;
  jobs::WatchdogJob watchdog;
  jobs::SystemdStatusJob status;
  Scheduler scheduler;
};

}  // namespace dedupd::daemon::supervisor
