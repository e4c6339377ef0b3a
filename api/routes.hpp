// The one thing dedupd and dedupctl share: where things live on the socket.
// Bodies are documented in docs/API.md; the daemon owns state, the client
// owns presentation.
#pragma once

#include <string_view>

namespace dedupd::api {

inline constexpr std::string_view kVersionPrefix = "/v1";

// Read routes (any caller that can open the socket).
inline constexpr std::string_view kChunk = "/v1/chunk/";      // GET  + <hash>
inline constexpr std::string_view kChunkBatch = "/v1/chunk";  // POST {"hashes":[...]} or lines
inline constexpr std::string_view kXorb = "/v1/xorb/";        // GET  + <hash>
inline constexpr std::string_view kFile = "/v1/file/";        // GET  + <hash>
inline constexpr std::string_view kSha256 = "/v1/sha256/";    // GET  + <hex>
inline constexpr std::string_view kShards = "/v1/shards";     // GET  [?state=...]
inline constexpr std::string_view kShard = "/v1/shard/";      // GET  + <hash>; DELETE is admin
inline constexpr std::string_view kStats = "/v1/stats";       // GET
inline constexpr std::string_view kStatus = "/v1/status";     // GET
inline constexpr std::string_view kHealth = "/healthz";       // GET
inline constexpr std::string_view kMetrics = "/metrics";      // GET, Prometheus text
// The fleet as its database sees it: hosts, shards, entries (docs/FLEET.md).
inline constexpr std::string_view kFleetStatus = "/v1/fleet/status";  // GET
// The Xet cache steward's next pass as a dry run (`dedupctl xet-cache plan`).
inline constexpr std::string_view kXetCachePlan = "/v1/xet-cache/plan";  // GET [?root=PATH]
// Lookups (chunk, xorb, file, sha256) take ?local_only=1 to leave the fleet out.
inline constexpr std::string_view kLocalOnly = "local_only";

// Admin routes: root, dedupd's own user or a member of admin_group
// (SO_PEERCRED), else 403.
inline constexpr std::string_view kRescan = "/v1/admin/rescan";               // POST
inline constexpr std::string_view kReload = "/v1/admin/reload";               // POST: as SIGHUP, waited for
inline constexpr std::string_view kIndexRebuild = "/v1/admin/index/rebuild";  // POST
inline constexpr std::string_view kPurge = "/v1/admin/purge";                 // POST [?dry_run=1]
inline constexpr std::string_view kIngest = "/v1/admin/ingest";               // POST shard/bundle bytes [?name=]
// POST <hash>: a set-aside shard answers global-dedup queries again.
inline constexpr std::string_view kRestore = "/v1/admin/restore/";
// POST <request id>: a shard the local Xet endpoint passed to its CAS,
// mirrored by its nginx; learned once the CAS accepts it (the endpoint only).
inline constexpr std::string_view kLearnShard = "/v1/xet-endpoint/shards/";
// The endpoint's downloads (docs/XET-ENDPOINT.md, "Downloads"), the
// endpoint only: a reconstruction asked of the CAS with its fetch URLs
// renamed to the endpoint's; and nginx's check of one of those.
inline constexpr std::string_view kXetReconstruction = "/v1/xet-endpoint/reconstruction";  // GET
inline constexpr std::string_view kXetGrant = "/v1/xet-endpoint/grant";                    // GET
inline constexpr std::string_view kXetFill = "/v1/xet-endpoint/fill";                      // GET
// A fleet tier host's digest of an object it checked, for an edge.
inline constexpr std::string_view kXetObjectDigest = "/v1/xet-endpoint/object-digest";  // GET
inline constexpr std::string_view kExport = "/v1/admin/export";  // POST ?format=swh-shard -> file bytes
inline constexpr std::string_view kFleetForgetHost = "/v1/admin/fleet/forget-host/";  // POST + <host name>
inline constexpr std::string_view kFleetRetry = "/v1/admin/fleet/retry";  // POST: queue parked entries again

// Xet global-dedup endpoint, as the Hugging Face server answers it; the
// JavaScript client uses the "default" prefix, the docs "default-merkledb".
inline constexpr std::string_view kGlobalDedup = "/v1/chunks/default-merkledb/";
inline constexpr std::string_view kGlobalDedupShort = "/v1/chunks/default/";
// The local Xet endpoint's nginx (packaging/xet-endpoint/nginx.conf.in)
// marks the global-dedup queries it passes on, so dedupd counts those
// apart from anyone else's: what it answered, against what went upstream.
inline constexpr std::string_view kViaHeader = "X-Dedupd-Via";
inline constexpr std::string_view kViaXetEndpoint = "xet-endpoint";
// The CAS the asking client uploads to (the endpoint's upstream CAS URL):
// a global-dedup query that names one is answered only from shards of that
// CAS (and of unknown CAS where xet_endpoint.unknown_cas_answers says so).
inline constexpr std::string_view kCasHeader = "X-Dedupd-Cas";

// POST /v1/chunk takes any number of hashes (streamed, docs/API.md); a
// client sending a document body keeps each to this many.
inline constexpr std::size_t kMaxBatchHashes = 100'000;

}  // namespace dedupd::api
