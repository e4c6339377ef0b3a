// The Xet cache steward's passes (daemon/xetcache/steward.hpp), every
// xet_cache.interval by the wall clock, started only while nothing waits to
// be ingested. A pass runs in the steward's worker: a first pass over a
// large cache reads every shard, which on the loop would hold up ingest and
// the watchdog. A merge writes a new shard, which the watcher then queues
// like any other.
#pragma once

#include <cstdint>

#include "daemon/ingest/ingest_queue.hpp"
#include "daemon/jobs/job.hpp"
#include "daemon/xetcache/steward.hpp"

namespace dedupd::daemon::jobs {

class StewardJob final : public Job {
 public:
  StewardJob(xetcache::CacheSteward& steward, const ingest::IngestQueue& queue) : steward_(steward), queue_(queue) {}

  const char* name() const override { return "xet-cache steward"; }
  std::optional<std::chrono::milliseconds> due_in() override;
  void run() override;
  // The managed roots of the watch list, and a pass at once.
  void configure(const config::Config& config, Apply when) override;

 private:
  xetcache::CacheSteward& steward_;
  const ingest::IngestQueue& queue_;
  std::chrono::seconds interval_{0};
  std::uint64_t next_pass_ = 0;  // unix s
};

}  // namespace dedupd::daemon::jobs
