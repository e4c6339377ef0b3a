#include "daemon/jobs/ingest.hpp"

namespace dedupd::daemon::jobs {

std::optional<std::chrono::milliseconds> IngestJob::due_in() {
  if (!queue_.idle()) return std::chrono::milliseconds(0);
  const auto retry = queue_.next_retry();
  if (!retry) return std::nullopt;
  return until(*retry, ingest::IngestQueue::Clock::now());
}

void IngestJob::run() {
  queue_.ingest(kBudget);
  queue_.retry_waiting(ingest::IngestQueue::Clock::now());
}

}  // namespace dedupd::daemon::jobs
