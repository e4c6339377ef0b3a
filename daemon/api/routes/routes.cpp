#include "daemon/api/routes/routes.hpp"

#include "api/routes.hpp"

namespace dedupd::daemon::http {

std::vector<Route> api_routes() {
  namespace p = ::dedupd::api;
  constexpr Access admin = Access::admin, read = Access::read;
  constexpr Body none = Body::none;
  constexpr Wait fleet = Wait::fleet;
  // name (metric label), path, prefix?, {method, handler, access, body, wait}
  return {
      {"chunk", p::kChunk, true, {{"GET", get_chunk, read, none, fleet}}},
      {"chunk_batch", p::kChunkBatch, false, {{"POST", post_chunk_batch, read, Body::hashes}}},
      {"xorb", p::kXorb, true, {{"GET", get_xorb, read, none, fleet}}},
      {"file", p::kFile, true, {{"GET", get_file, read, none, fleet}}},
      {"sha256", p::kSha256, true, {{"GET", get_sha256, read, none, fleet}}},
      {"shards", p::kShards, false, {{"GET", get_shards}}},
      {"shard", p::kShard, true, {{"GET", get_shard}, {"DELETE", delete_shard, admin}}},
      {"stats", p::kStats, false, {{"GET", get_stats}}},
      {"status", p::kStatus, false, {{"GET", get_status}}},
      {"healthz", p::kHealth, false, {{"GET", get_health}}},
      {"metrics", p::kMetrics, false, {{"GET", get_metrics}}},
      {"rescan", p::kRescan, false, {{"POST", post_rescan, admin}}},
      {"reload", p::kReload, false, {{"POST", post_reload, admin}}},
      {"index_rebuild", p::kIndexRebuild, false, {{"POST", post_index_rebuild, admin}}},
      {"purge", p::kPurge, false, {{"POST", post_purge, admin}}},
      {"ingest", p::kIngest, false, {{"POST", post_ingest, admin, Body::upload}}},
      {"restore", p::kRestore, true, {{"POST", post_restore, admin}}},
      {"learn_shard", p::kLearnShard, true, {{"POST", post_learn_shard, Access::endpoint, Body::upload}}},
      {"export", p::kExport, false, {{"POST", post_export, admin}}},
      {"fleet_status", p::kFleetStatus, false, {{"GET", get_fleet_status, read, none, fleet}}},
      {"xet_cache_plan", p::kXetCachePlan, false, {{"GET", get_xet_cache_plan, read, none, Wait::work}}},
      {"fleet_forget_host", p::kFleetForgetHost, true, {{"POST", post_fleet_forget_host, admin}}},
      {"fleet_retry", p::kFleetRetry, false, {{"POST", post_fleet_retry, admin}}},
      {"global_dedup", p::kGlobalDedup, true, {{"GET", get_global_dedup, read, none, fleet}}},
      {"global_dedup", p::kGlobalDedupShort, true, {{"GET", get_global_dedup, read, none, fleet}}},
  };
}

}  // namespace dedupd::daemon::http
