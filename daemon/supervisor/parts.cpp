#include "daemon/supervisor/parts.hpp"

namespace dedupd::daemon::supervisor {

// The loop looks around at least this often: what changes without an event
// (free space, a wall clock set anew) is seen within it.
constexpr auto kLongestSleep = std::chrono::milliseconds(1000);

Parts::Parts(const Ground& g)
    : keys(g.config.key_file(), g.config.global_dedup.key_rotation),
      ingester(g.index, g.counters, g.cas_scopes),
      learner(g.index, g.loop),
      expiry_runner(g.index, g.watcher, g.counters),
      steward(g.index, xetcache::StewardOptions{.state_dir = g.config.state_dir.native()}),
      queue(ingester, g.config.state_dir, g.health),
      fleet(g.index, g.outbox_wake, g.config),
      safety_scan(g.watcher, queue),
      key_rotation(keys),
      ingest(queue),
      filter_build(g.index),
      scrub(g.index, queue, g.health, [this](const std::string& damage) { rebuild.now(damage); }),
      rebuild(g.config.index_dir(), g.health, g.stop),
      expiry(expiry_runner, g.counters, queue, [this] { status.publish(true); }),
      steward_passes(steward, queue),
      status(g.index, queue),
      scheduler(kLongestSleep) {
  learner.set_copies(&g.learned_copies);
  learner.set_events(fleet.learner_events());
  queue.set_events({.expiry_may_move = [this] { expiry.reschedule(); },
                    .expired_found = [this] { expiry.want_pass(); },
                    .between_files = [this] { watchdog.ping_if_due(); },
                    .drained = [this] { filter_build.queue_drained(); }});
  for (jobs::Job* job :
       std::initializer_list<jobs::Job*>{&fleet, &safety_scan, &key_rotation, &ingest, &filter_build, &scrub, &rebuild,
                                         &expiry, &steward_passes, &download_cache, &watchdog, &status})
    scheduler.add(*job);
}

}  // namespace dedupd::daemon::supervisor
