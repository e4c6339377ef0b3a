#include "daemon/jobs/filter_build.hpp"

#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>

#include "daemon/log/logging.hpp"
#include "index/index.hpp"

namespace dedupd::daemon::jobs {

FilterBuilder::FilterBuilder(index::Index& index) : index_(index), thread_([this] { run(); }) {}

FilterBuilder::~FilterBuilder() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  give_up_.store(true);
  cv_.notify_one();
  thread_.join();
}

void FilterBuilder::request() {
  {
    std::lock_guard lock(mu_);
    wanted_ = true;
  }
  cv_.notify_one();
}

void FilterBuilder::run() {
  // Background work: queries and ingest come first.
  (void)::setpriority(PRIO_PROCESS, ::gettid(), 10);
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return wanted_ || stopping_; });
    if (stopping_) return;
    wanted_ = false;
    lock.unlock();
    if (!index_.chunk_filter_due()) {  // asked twice for one need
      lock.lock();
      continue;
    }
    auto t0 = std::chrono::steady_clock::now();
    auto built = index_.build_chunk_filter([this](unsigned) { return !give_up_.load(); });
    auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (built)
      spdlog::info(
          "chunk filter in service: {} entries, room for {}, {:.1f} MiB{}, built in {:.0f} ms", built->added,
          built->capacity, double(built->bytes) / (1 << 20),
          built->at_bound ? " (at index.filter_memory: lookups search more absent forms as the index grows)" : "", ms);
    else  // lookups stay correct without it, only slower
      spdlog::warn("chunk filter not built: {}", built.error().to_string());
    lock.lock();
  }
}

void FilterBuildJob::start() {
  builder_ = std::make_unique<FilterBuilder>(index_);
  builder_->request();
}

std::optional<std::chrono::milliseconds> FilterBuildJob::due_in() {
  if (!wanted_) return std::nullopt;
  return std::chrono::milliseconds(0);
}

void FilterBuildJob::run() {
  wanted_ = false;
  if (index_.chunk_filter_due()) builder_->request();
}

}  // namespace dedupd::daemon::jobs
