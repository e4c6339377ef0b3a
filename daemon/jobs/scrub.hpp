// The background scrub: a pass over every page of the index, in slices
// paced by daemon/core/scrub_pace.hpp, every index.scrub_interval. It runs
// only while nothing waits to be ingested, the first pass once the files
// found at start are in. Damage it finds ends in a rebuild (the
// `damaged` handed in); an error that is not the index's pages is logged
// and the pass tried again at the next.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "daemon/core/index_health_board.hpp"
#include "daemon/ingest/ingest_queue.hpp"
#include "daemon/jobs/job.hpp"
#include "index/index.hpp"

namespace dedupd::daemon::jobs {

class ScrubJob final : public Job {
 public:
  using Clock = std::chrono::steady_clock;

  ScrubJob(const index::Index& index, const ingest::IngestQueue& queue, core::IndexHealthBoard& health,
           std::function<void(const std::string& damage)> damaged)
      : index_(index), queue_(queue), health_(health), damaged_(std::move(damaged)) {}

  const char* name() const override { return "scrub"; }
  std::optional<std::chrono::milliseconds> due_in() override;
  void run() override;
  void configure(const config::Config& config, Apply when) override;

 private:
  void start();
  void slice();

  const index::Index& index_;
  const ingest::IngestQueue& queue_;
  core::IndexHealthBoard& health_;
  std::function<void(const std::string&)> damaged_;
  std::optional<std::chrono::seconds> interval_;
  // Where it is, when its next slice and pass may run.
  index::Index::ScrubPosition pos_;
  bool started_ = false;  // the queue the start filled has drained
  Clock::time_point next_slice_;
  std::optional<Clock::time_point> next_pass_;
};

}  // namespace dedupd::daemon::jobs
