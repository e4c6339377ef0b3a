// The index's in-memory chunk filter, built off the work loop: once after
// start (READY does not wait for it; lookups are only slower until it is
// in service) and again when the index says it is due (grown past its
// capacity, or another process wrote to the index), which it is asked
// each time the ingest queue has drained.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "daemon/jobs/job.hpp"

namespace dedupd::index {
class Index;
}

namespace dedupd::daemon::jobs {

// The builder's thread.
class FilterBuilder {
 public:
  explicit FilterBuilder(index::Index& index);
  ~FilterBuilder();  // gives up a build under way at its next snapshot
  FilterBuilder(const FilterBuilder&) = delete;
  FilterBuilder& operator=(const FilterBuilder&) = delete;

  // Asks for a build; requests while one runs fold into one more build.
  void request();

 private:
  void run();

  index::Index& index_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool wanted_ = false;
  bool stopping_ = false;
  std::atomic<bool> give_up_{false};  // read by the build between its snapshots
  std::thread thread_;
};

class FilterBuildJob final : public Job {
 public:
  explicit FilterBuildJob(index::Index& index) : index_(index) {}

  // The builder's thread, and a first build.
  void start();
  // The ingest queue ran empty: the index may have outgrown its filter.
  void queue_drained() { wanted_ = builder_ != nullptr; }

  const char* name() const override { return "chunk filter build"; }
  std::optional<std::chrono::milliseconds> due_in() override;
  void run() override;

 private:
  index::Index& index_;
  std::unique_ptr<FilterBuilder> builder_;
  bool wanted_ = false;
};

}  // namespace dedupd::daemon::jobs
