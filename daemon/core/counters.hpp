// Counters for /metrics, bumped on the work loop and read by HTTP threads.
#pragma once

#include <atomic>
#include <cstdint>

#include "daemon/core/status.hpp"

namespace dedupd::daemon::core {

struct Counters {
  std::atomic<std::uint64_t> shards_ingested{0};
  std::atomic<std::uint64_t> shards_duplicate{0};
  std::atomic<std::uint64_t> shards_rejected{0};
  std::atomic<std::uint64_t> shards_expired{0};
  std::atomic<std::uint64_t> shards_removed{0};
  std::atomic<std::uint64_t> files_deleted{0};
  std::atomic<std::uint64_t> chunks_ingested{0};
  std::atomic<std::uint64_t> rescans{0};

  DaemonCounters snapshot() const {
    DaemonCounters c;
    c.shards_ingested = shards_ingested;
    c.shards_duplicate = shards_duplicate;
    c.shards_rejected = shards_rejected;
    c.shards_expired = shards_expired;
    c.shards_removed = shards_removed;
    c.files_deleted = files_deleted;
    c.chunks_ingested = chunks_ingested;
    c.rescans = rescans;
    return c;
  }
};

}  // namespace dedupd::daemon::core
