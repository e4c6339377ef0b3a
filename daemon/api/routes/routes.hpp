// The API's routing table (docs/API.md) and the handlers behind it, one
// source file per resource.
#pragma once

#include <vector>

#include "daemon/api/http/router.hpp"

namespace dedupd::daemon::api::routes {

std::vector<http::Route> api_routes();

// routes_chunk.cpp
http::Response get_chunk(http::Context&, http::Request&);
http::Response post_chunk_batch(http::Context&, http::Request&);
// routes_objects.cpp: xorb, file, sha256
http::Response get_xorb(http::Context&, http::Request&);
http::Response get_file(http::Context&, http::Request&);
http::Response get_sha256(http::Context&, http::Request&);
// routes_shards.cpp
http::Response get_shards(http::Context&, http::Request&);
http::Response get_shard(http::Context&, http::Request&);
http::Response delete_shard(http::Context&, http::Request&);  // admin
// routes_system.cpp
http::Response get_stats(http::Context&, http::Request&);
http::Response get_status(http::Context&, http::Request&);
http::Response get_xet_cache_plan(http::Context&, http::Request&);
http::Response get_health(http::Context&, http::Request&);
http::Response get_metrics(http::Context&, http::Request&);
// routes_admin.cpp
http::Response post_rescan(http::Context&, http::Request&);
http::Response post_reload(http::Context&, http::Request&);
http::Response post_index_rebuild(http::Context&, http::Request&);
http::Response post_purge(http::Context&, http::Request&);
http::Response post_ingest(http::Context&, http::Request&);
http::Response post_learn_shard(http::Context&, http::Request&);
http::Response post_restore(http::Context&, http::Request&);
// routes_export.cpp
http::Response post_export(http::Context&, http::Request&);
// routes_fleet.cpp
http::Response get_fleet_status(http::Context&, http::Request&);
http::Response post_fleet_forget_host(http::Context&, http::Request&);  // admin
http::Response post_fleet_retry(http::Context&, http::Request&);        // admin
// routes_xet_download.cpp: the endpoint's downloads
http::Response get_xet_reconstruction(http::Context&, http::Request&);
http::Response get_xet_grant(http::Context&, http::Request&);
http::Response get_xet_object_digest(http::Context&, http::Request&);
http::Response get_xet_fill(http::Context&, http::Request&);
// routes_global_dedup.cpp
http::Response get_global_dedup(http::Context&, http::Request&);

}  // namespace dedupd::daemon::api::routes
