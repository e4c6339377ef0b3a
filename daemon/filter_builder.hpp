// Builds the index's in-memory chunk filter off the work loop: once after
// start (READY does not wait for it; lookups are only slower until it is
// in service) and again whenever the index says it is due (grown past its
// capacity, or another process wrote to the index).
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace dedupd::index {
class Index;
}

namespace dedupd::daemon {

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

}  // namespace dedupd::daemon
