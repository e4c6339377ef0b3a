#include "daemon/answers/chunk.hpp"

namespace dedupd::daemon::answers {

base::Result<ChunkAnswer> answer_chunk(const Lookups& lookups, const shard::Hash& raw_chunk) {
  auto locations = lookups.index().lookup(raw_chunk);
  if (!locations) return locations.error();
  ChunkAnswer answer;
  answer.local = std::move(*locations);
  if (answer.local.empty() && lookups.fleet())
    ask_fleet_for_misses(*lookups.fleet(), std::span(&raw_chunk, 1), {}, answer.remote, false);
  if (!answer.found()) {
    auto expired = lookups.index().expired_holders(raw_chunk);
    if (expired) answer.expired = std::move(*expired);
  }
  return answer;
}

}  // namespace dedupd::daemon::answers
