#include "daemon/api/routes/routes.hpp"

#include "api/routes.hpp"

namespace dedupd::daemon::api::routes {

std::vector<http::Route> api_routes() {
  namespace p = ::dedupd::api;
  constexpr http::Access admin = http::Access::admin, read = http::Access::read;
  constexpr http::Body none = http::Body::none;
  constexpr http::Wait fleet = http::Wait::fleet;
  // name (metric label), path, prefix?, {method, handler, access, body, wait}
  return {
      {"chunk", p::kChunk, true, {{"GET", get_chunk, read, none, fleet}}},
      {"chunk_batch", p::kChunkBatch, false, {{"POST", post_chunk_batch, read, http::Body::hashes}}},
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
      {"ingest", p::kIngest, false, {{"POST", post_ingest, admin, http::Body::upload}}},
      {"restore", p::kRestore, true, {{"POST", post_restore, admin}}},
      {"learn_shard", p::kLearnShard, true, {{"POST", post_learn_shard, http::Access::endpoint, http::Body::upload}}},
      {"export", p::kExport, false, {{"POST", post_export, admin}}},
      {"fleet_status", p::kFleetStatus, false, {{"GET", get_fleet_status, read, none, fleet}}},
      {"xet_cache_plan", p::kXetCachePlan, false, {{"GET", get_xet_cache_plan, read, none, http::Wait::work}}},
      {"fleet_forget_host", p::kFleetForgetHost, true, {{"POST", post_fleet_forget_host, admin}}},
      {"fleet_retry", p::kFleetRetry, false, {{"POST", post_fleet_retry, admin}}},
      {"xet_reconstruction", p::kXetReconstruction, false, {{"GET", get_xet_reconstruction, http::Access::endpoint}}},
      {"xet_grant", p::kXetGrant, false, {{"GET", get_xet_grant, http::Access::endpoint}}},
      {"xet_object_digest", p::kXetObjectDigest, false, {{"GET", get_xet_object_digest, http::Access::endpoint}}},
      // A fill takes as long as the storage: off the HTTP threads.
      {"xet_fill", p::kXetFill, false, {{"GET", get_xet_fill, http::Access::endpoint, none, http::Wait::storage}}},
      {"global_dedup", p::kGlobalDedup, true, {{"GET", get_global_dedup, read, none, fleet}}},
      {"global_dedup", p::kGlobalDedupShort, true, {{"GET", get_global_dedup, read, none, fleet}}},
  };
}

}  // namespace dedupd::daemon::api::routes
