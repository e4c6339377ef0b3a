// The API's routing table (docs/API.md) and the handlers behind it, one
// source file per resource.
#pragma once

#include <vector>

#include "daemon/api/http/router.hpp"

namespace dedupd::daemon::http {

std::vector<Route> api_routes();

// routes_chunk.cpp
Response get_chunk(Context&, Request&);
Response post_chunk_batch(Context&, Request&);
// routes_objects.cpp: xorb, file, sha256
Response get_xorb(Context&, Request&);
Response get_file(Context&, Request&);
Response get_sha256(Context&, Request&);
// routes_shards.cpp
Response get_shards(Context&, Request&);
Response get_shard(Context&, Request&);
Response delete_shard(Context&, Request&);  // admin
// routes_system.cpp
Response get_stats(Context&, Request&);
Response get_status(Context&, Request&);
Response get_xet_cache_plan(Context&, Request&);
Response get_health(Context&, Request&);
Response get_metrics(Context&, Request&);
// routes_admin.cpp
Response post_rescan(Context&, Request&);
Response post_reload(Context&, Request&);
Response post_index_rebuild(Context&, Request&);
Response post_purge(Context&, Request&);
Response post_ingest(Context&, Request&);
Response post_learn_shard(Context&, Request&);
Response post_restore(Context&, Request&);
// routes_export.cpp
Response post_export(Context&, Request&);
// routes_fleet.cpp
Response get_fleet_status(Context&, Request&);
Response post_fleet_forget_host(Context&, Request&);  // admin
Response post_fleet_retry(Context&, Request&);        // admin
// routes_global_dedup.cpp
Response get_global_dedup(Context&, Request&);

}  // namespace dedupd::daemon::http
