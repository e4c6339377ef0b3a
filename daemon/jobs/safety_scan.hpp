// The rescan of every watched tree each expiry.check_interval (wall clock):
// it catches roots created since, files a full disk made dedupd skip, and
// anything inotify could not tell. What it finds joins the ingest queue; a
// file the index knows with the same size and mtime costs a stat and a
// lookup.
#pragma once

#include <chrono>
#include <cstdint>

#include "daemon/ingest/ingest_queue.hpp"
#include "daemon/jobs/job.hpp"
#include "daemon/watch/watcher.hpp"

namespace dedupd::daemon::jobs {

class SafetyScanJob final : public Job {
 public:
  SafetyScanJob(watch::Watcher& watcher, ingest::IngestQueue& queue) : watcher_(watcher), queue_(queue) {}

  const char* name() const override { return "safety scan"; }
  std::optional<std::chrono::milliseconds> due_in() override;
  void run() override;
  // The next scan one check_interval from now.
  void configure(const config::Config& config, Apply when) override;

 private:
  watch::Watcher& watcher_;
  ingest::IngestQueue& queue_;
  std::chrono::seconds interval_{300};
  std::uint64_t next_ = 0;  // unix s
};

}  // namespace dedupd::daemon::jobs
