// GET /v1/stats, /v1/status, /healthz, /metrics.
#include <fmt/format.h>

#include "daemon/api/http/metrics.hpp"
#include "daemon/api/render/fleet_json.hpp"
#include "daemon/api/render/json_shapes.hpp"
#include "daemon/api/render/xet_downloads.hpp"
#include "daemon/api/routes/route_util.hpp"
#include "daemon/api/routes/routes.hpp"

namespace dedupd::daemon::api::routes {

http::Response get_stats(http::Context& ctx, http::Request& req) {
  const index::Index* idx = open_index(ctx);
  if (!idx) return not_ready();
  auto stats = idx->stats();
  if (!stats) return index_failure(req, stats.error());
  return http::json(render::dump(render::stats_json(*stats)));
}

http::Response get_status(http::Context& ctx, http::Request& req) {
  core::StatusInfo s = ctx.service.status();
  render::Json doc = {{"version", s.version},     {"pid", s.pid},     {"uptime_s", s.uptime_s}, {"socket", s.socket},
                      {"state_dir", s.state_dir}, {"watch", s.watch}, {"ready", false},         {"stats", nullptr}};
  // Status answers while starting too ("ready": false, "stats": null): it is
  // how an operator sees what the daemon is doing.
  if (const index::Index* idx = open_index(ctx)) {
    auto stats = idx->stats();
    if (!stats) return index_failure(req, stats.error());
    doc["ready"] = true;
    doc["stats"] = render::stats_json(*stats);
  }
  if (auto fleet = ctx.service.fleet_state()) doc["fleet"] = render::publisher_json(*fleet);
  render::Json caches = render::Json::array();
  for (const auto& c : s.xet_caches)
    caches.push_back({{"endpoint", c.endpoint},
                      {"files", c.files},
                      {"bytes", c.bytes},
                      {"chunk_entries", c.chunk_entries},
                      {"max_bytes", c.max_bytes},
                      {"max_chunk_entries", c.max_chunk_entries},
                      {"max_chunk_entries_why", c.max_chunk_entries_why},
                      {"merges", c.merges},
                      {"merged_away", c.merged_away},
                      {"evicted", c.evicted},
                      {"pending_deletions", c.pending_deletions},
                      {"live_clients", c.live_clients},
                      {"last_pass", c.last_pass},
                      {"files_before", c.files_before},
                      {"bytes_before", c.bytes_before},
                      {"pending_bytes", c.pending_bytes},
                      {"removed_kept", c.removed_kept},
                      {"liveness", {{"established", c.liveness_established}, {"why", c.liveness_why}}},
                      {"client_pids", c.client_pids},
                      {"standing_by", c.standing_by},
                      {"lock_holder", c.lock_holder},
                      {"set_aside", c.held_back},  // the JSON name scripts read
                      {"problem", c.problem},
                      {"holds_removed", c.holds_removed},
                      {"pass", {{"running", c.pass_running}, {"files_read", c.pass_files_read}}}});
  doc["xet_caches"] = std::move(caches);
  render::Json waiting = render::Json::array();
  for (const auto& f : s.waiting.files)
    waiting.push_back({{"path", f.path},
                       {"rule", f.rule},
                       {"why", f.why},
                       {"since", f.since},
                       {"age_s", f.age_s},
                       {"attempts", f.attempts},
                       {"next_retry_s", f.next_retry_s}});
  doc["waiting"] = {{"count", s.waiting.count}, {"files", std::move(waiting)}};
  const core::StateDirSpace& sp = s.state_dir_space;
  doc["state_dir_space"] = {{"free_bytes", sp.known ? render::Json(sp.free_bytes) : render::Json(nullptr)},
                            {"size_bytes", sp.known ? render::Json(sp.size_bytes) : render::Json(nullptr)},
                            {"disk_full", sp.full}};
  const core::IndexHealth& h = s.index_health;
  doc["index_health"] = {{"state", h.state},
                         {"damage", h.damage},
                         {"moved_to", h.moved_to},
                         {"found_at", h.found_at},
                         {"rebuild", {{"files_total", h.rebuild_files_total}, {"files_done", h.rebuild_files_done}}},
                         {"scrub_enabled", h.scrub_enabled},
                         {"scrub_running", h.scrub_running},
                         {"scrub_passes", h.scrub_passes},
                         {"scrub_items", h.scrub_items},
                         {"scrub_last_end", h.scrub_last_end},
                         {"scrub_last_result", h.scrub_last_result},
                         {"learned_copies", {{"files", h.learned_copies}, {"bytes", h.learned_copies_bytes}}}};
  // Shown once dedupd knows of the endpoint: from its settings, from its
  // first query (nginx marks what it passes on whether or not it was told),
  // or by the learning socket systemd passed for it.
  const http::Metrics::EndpointQueries q = ctx.metrics.endpoint_queries();
  const core::LearnStats l = ctx.service.learn_stats();
  if (s.xet_endpoint || q.local + q.forwarded != 0 || l.listening) {
    render::Json e = {{"config", nullptr}, {"upstreams", nullptr},     {"ports", nullptr},
                      {"local", q.local},  {"forwarded", q.forwarded}, {"since", q.since}};
    if (s.xet_endpoint) {
      const core::XetEndpointStatus& x = *s.xet_endpoint;
      e["config"] = {{"path", x.config}, {"present", x.config_present}, {"problem", x.problem}};
      e["upstreams"] = {{"hub", x.hub_upstream}, {"cas", x.cas_upstream}};
      e["ports"] = {{"hub", x.hub_port}, {"cas", x.cas_port}};
    }
    e["learning"] = {{"listening", l.listening},
                     {"held", l.held},
                     {"held_bytes", l.held_bytes},
                     {"accepted", l.accepted},
                     {"refused", l.refused},
                     {"failed", l.failed},
                     {"expired", l.expired},
                     {"learned", l.learned},
                     {"already_known", l.already_known},
                     {"set_aside", l.set_aside},
                     {"restored", l.restored},
                     {"refused_senders", l.refused_senders},
                     {"unmatched", l.unmatched},
                     {"not_learned", l.not_learned}};
    doc["xet_endpoint"] = std::move(e);
  }
  if (s.xet_downloads) doc["xet_downloads"] = render::xet_downloads_json(*s.xet_downloads);
  return http::json(render::dump(doc));
}

http::Response get_xet_cache_plan(http::Context& ctx, http::Request& req) {
  std::string root;
  if (auto r = req.query_value("root")) root = std::string(*r);
  auto plan = ctx.service.xet_cache_plan(root);
  if (!plan)
    return http::error(http::kNotReady, "in_progress", "a pass of the steward is under way: ask again when it ends");
  render::Json caches = render::Json::array();
  for (const auto& p : *plan) {
    render::Json steps = render::Json::array();
    for (const auto& s : p.steps)
      steps.push_back({{"action", s.action},
                       {"files", s.files},
                       {"why", s.why},
                       {"bytes_saved", s.bytes_saved},
                       {"entries_saved", s.entries_saved}});
    caches.push_back({{"endpoint", p.endpoint},
                      {"liveness", {{"established", p.liveness_established}, {"why", p.liveness_why}}},
                      {"standing_by", p.standing_by},
                      {"lock_holder", p.lock_holder},
                      {"steps", std::move(steps)},
                      {"set_aside", p.held_back}});  // the JSON name scripts read
  }
  return http::json(render::dump(render::Json{{"xet_caches", std::move(caches)}}));
}

http::Response get_health(http::Context& ctx, http::Request&) {
  if (!open_index(ctx)) {
    render::Json doc = {
        {"status", "starting"},
        {"error", {{"code", http::error_code(http::kNotReady)}, {"message", "the index is not open yet"}}}};
    return http::json(render::dump(doc), http::kNotReady);
  }
  return http::json(R"({"status":"ok"})");
}

http::Response get_metrics(http::Context& ctx, http::Request& req) {
  http::Response r;
  r.content_type = std::string(http::kPrometheus);
  std::string& out = r.body;
  http::PromWriter w(out);

  core::DaemonCounters c = ctx.service.counters();
  auto counter = [&](std::string_view name, std::string_view help, std::uint64_t v) {
    w.family(name, "counter", help);
    w.sample(name, "", v);
  };
  counter("dedupd_shards_ingested_total", "Shards newly indexed.", c.shards_ingested);
  counter("dedupd_shards_duplicate_total", "Valid shards that were already indexed.", c.shards_duplicate);
  counter("dedupd_shards_rejected_total", "Files that failed validation.", c.shards_rejected);
  counter("dedupd_shards_expired_total", "Shards whose entries left the index at expiry.", c.shards_expired);
  counter("dedupd_shards_removed_total", "Shards removed on request.", c.shards_removed);
  counter("dedupd_files_deleted_total", "Expired shard files deleted after the grace.", c.files_deleted);
  counter("dedupd_chunks_ingested_total", "Chunk entries of newly indexed shards.", c.chunks_ingested);
  counter("dedupd_rescans_total", "Full directory scans.", c.rescans);
  const core::LearnStats l = ctx.service.learn_stats();
  w.family("dedupd_xet_endpoint_shard_uploads_total", "counter",
           "Shard uploads through the local Xet endpoint, by what its CAS answered.");
  w.sample("dedupd_xet_endpoint_shard_uploads_total", "cas=\"accepted\"", l.accepted);
  w.sample("dedupd_xet_endpoint_shard_uploads_total", "cas=\"refused\"", l.refused);
  w.sample("dedupd_xet_endpoint_shard_uploads_total", "cas=\"failed\"", l.failed);
  counter("dedupd_xet_endpoint_shards_learned_total", "Accepted shards the endpoint taught the index.", l.learned);
  counter("dedupd_xet_endpoint_shards_set_aside_total", "Shards set aside after the CAS refused an upload.",
          l.set_aside);
  counter("dedupd_xet_endpoint_shards_restored_total",
          "Set-aside shards that answer again: the CAS accepted the same shard again.", l.restored);
  // Bodies held for their CAS's status: a pile that grows means statuses stop coming.
  w.family("dedupd_xet_endpoint_learning_held", "gauge", "Mirrored shard bodies waiting for their CAS's status.");
  w.sample("dedupd_xet_endpoint_learning_held", "", l.held);
  w.family("dedupd_xet_endpoint_learning_held_bytes", "gauge", "Bytes of those bodies.");
  w.sample("dedupd_xet_endpoint_learning_held_bytes", "", l.held_bytes);

  // One status a scrape: it reads the state dir's file system, the learned
  // copies and the endpoint's settings file.
  const core::StatusInfo st = ctx.service.status();
  {
    w.family("dedupd_ingest_waiting_files", "gauge",
             "Files the index could not take for a reason that passes (disk full, EIO), waiting for a retry.");
    w.sample("dedupd_ingest_waiting_files", "", st.waiting.count);
    w.family("dedupd_ingest_waiting_oldest_age_seconds", "gauge", "Age of the oldest waiting file (0: none).");
    w.sample("dedupd_ingest_waiting_oldest_age_seconds", "",
             st.waiting.files.empty() ? std::uint64_t(0) : st.waiting.files.front().age_s);
    if (st.state_dir_space.known) {
      w.family("dedupd_state_dir_free_bytes", "gauge", "Free space of the file system under state_dir.");
      w.sample("dedupd_state_dir_free_bytes", "", st.state_dir_space.free_bytes);
      w.family("dedupd_state_dir_size_bytes", "gauge", "Size of the file system under state_dir.");
      w.sample("dedupd_state_dir_size_bytes", "", st.state_dir_space.size_bytes);
    }
    w.family("dedupd_disk_full", "gauge", "1 while index writes fail for lack of space and files wait.");
    w.sample("dedupd_disk_full", "", std::uint64_t(st.state_dir_space.full ? 1 : 0));
    w.family("dedupd_index_damaged", "gauge",
             "1 while the index is rebuilt after damage was found (index_health in /v1/status).");
    w.sample("dedupd_index_damaged", "", std::uint64_t(st.index_health.state == "rebuilding" ? 1 : 0));
    w.family("dedupd_index_rebuilds_total", "counter", "Damaged indexes moved aside and rebuilt since start.");
    w.sample("dedupd_index_rebuilds_total", "", std::uint64_t(st.index_health.damage.empty() ? 0 : 1));
    w.family("dedupd_index_scrub_passes_total", "counter", "Passes of the background scrub that found nothing wrong.");
    w.sample("dedupd_index_scrub_passes_total", "", st.index_health.scrub_passes);
    if (st.index_health.scrub_last_end != 0) {
      w.family("dedupd_index_scrub_last_end_seconds", "gauge", "Unix time the last scrub pass ended.");
      w.sample("dedupd_index_scrub_last_end_seconds", "", st.index_health.scrub_last_end);
    }
  }

  const index::Index* idx = open_index(ctx);
  w.family("dedupd_ready", "gauge", "1 once the index is open.");
  w.sample("dedupd_ready", "", std::uint64_t(idx ? 1 : 0));
  if (idx) {
    auto stats = idx->stats();
    if (!stats) return index_failure(req, stats.error());
    const index::Stats& s = *stats;
    w.family("dedupd_shards", "gauge", "Shard records by state.");
    w.sample("dedupd_shards", "state=\"live\"", s.shards_live);
    w.sample("dedupd_shards", "state=\"expired\"", s.shards_expired);
    w.sample("dedupd_shards", "state=\"removed\"", s.shards_removed);
    w.sample("dedupd_shards", "state=\"rejected\"", s.rejected);
    auto gauge = [&](std::string_view name, std::string_view help, std::uint64_t v) {
      w.family(name, "gauge", help);
      w.sample(name, "", v);
    };
    gauge("dedupd_xorbs", "Stored xorb forms.", s.xorbs);
    gauge("dedupd_chunk_entries", "Indexed chunk entries.", s.chunk_entries);
    gauge("dedupd_files", "Indexed file reconstructions.", s.files);
    gauge("dedupd_keys", "Live chunk-hash keys.", s.keys);
    gauge("dedupd_db_bytes", "Size of the LMDB data file.", s.db_bytes);
    gauge("dedupd_map_size_bytes", "LMDB map size.", s.map_size);
    gauge("dedupd_map_used_bytes", "LMDB map in use.", s.map_used);
    if (s.next_expiry) gauge("dedupd_next_expiry_seconds", "Unix time of the next shard expiry.", *s.next_expiry);
    const index::ChunkFilterInfo& f = s.chunk_filter;
    gauge("dedupd_chunk_filter_bytes", "Memory the in-memory chunk filters hold.", f.bytes);
    gauge("dedupd_chunk_filter_max_bytes", "Their bound (index.filter_memory).", f.max_bytes);
    gauge("dedupd_chunk_filter_capacity_entries", "Chunk entries the filter was sized for.", f.capacity);
    gauge("dedupd_chunk_filter_entries", "Chunk entries put in the filter (removed ones stay until a rebuild).",
          f.added);
    gauge("dedupd_chunk_filter_in_service", "1 while lookups may trust the filter.", std::uint64_t(f.in_service));
    w.family("dedupd_chunk_filter_false_positive_ratio", "gauge",
             "Expected share of absent chunk forms the filter lets through to a search.");
    w.sample("dedupd_chunk_filter_false_positive_ratio", "", f.false_positive_rate);
  }
  if (auto fleet = ctx.service.fleet_state()) {
    w.family("dedupd_fleet_connected", "gauge", "1 while the fleet primary answers the publisher.");
    w.sample("dedupd_fleet_connected", "", std::uint64_t(fleet->state == fleet_link::LinkState::connected));
    w.family("dedupd_fleet_outbox_depth", "gauge", "Outbox entries not yet in the fleet.");
    w.sample("dedupd_fleet_outbox_depth", "", fleet->outbox_depth);
    w.family("dedupd_fleet_outbox_oldest_age_seconds", "gauge", "Age of the oldest outbox entry (0: empty).");
    w.sample("dedupd_fleet_outbox_oldest_age_seconds", "", fleet->outbox_oldest_age_s.value_or(0));
    w.family("dedupd_fleet_parked", "gauge", "Outbox entries parked: not published (or dropped) and not retried yet.");
    w.sample("dedupd_fleet_parked", "", fleet->parked);
    const auto& m = fleet->lookup_memory;
    w.family("dedupd_fleet_key_filter_bytes", "gauge", "Memory the fleet key filters take.");
    w.sample("dedupd_fleet_key_filter_bytes", "", m.key_filter_bytes);
    w.family("dedupd_fleet_key_filter_max_bytes", "gauge", "Their bound (fleet.key_filter_memory).");
    w.sample("dedupd_fleet_key_filter_max_bytes", "", m.key_filter_max_bytes);
    w.family("dedupd_fleet_key_filters", "gauge", "Fleet keys whose filter is in use.");
    w.sample("dedupd_fleet_key_filters", "", m.key_filters);
    w.family("dedupd_fleet_keys_over_filter_budget", "gauge",
             "Fleet keys asked in every form: their filter did not fit fleet.key_filter_memory.");
    w.sample("dedupd_fleet_keys_over_filter_budget", "", m.keys_over_budget);
    w.family("dedupd_fleet_raw_filter_entries", "gauge",
             "Raw chunk entries in the fleet raw forms' filter (0: not in use; misses ask every raw form).");
    w.sample("dedupd_fleet_raw_filter_entries", "", m.raw_filter_entries);
    w.family("dedupd_fleet_xorb_cache_bytes", "gauge", "Memory the fleet xorb cache takes.");
    w.sample("dedupd_fleet_xorb_cache_bytes", "", m.xorb_cache_bytes);
    w.family("dedupd_fleet_xorb_cache_max_bytes", "gauge", "Its bound (fleet.lookup_cache).");
    w.sample("dedupd_fleet_xorb_cache_max_bytes", "", m.xorb_cache_max_bytes);
    counter("dedupd_fleet_reconcile_passes_total", "Anti-entropy passes over this host's shards.",
            fleet->reconcile_passes);
    w.family("dedupd_fleet_reconciled_total", "counter", "Differences anti-entropy found and queued.");
    w.sample("dedupd_fleet_reconciled_total", "action=\"publish\"", fleet->reconciled_publish);
    w.sample("dedupd_fleet_reconciled_total", "action=\"drop_hold\"", fleet->reconciled_drop);
    w.family("dedupd_fleet_set_aside_marks", "gauge",
             "Shards the fleet marks set aside (a CAS refused an upload relying on them), per CAS.");
    w.sample("dedupd_fleet_set_aside_marks", "", fleet->set_aside_marks);
    w.family("dedupd_fleet_set_aside_total", "counter",
             "Local shards set aside for another host's fleet mark, and brought back when the marks went.");
    w.sample("dedupd_fleet_set_aside_total", "action=\"set_aside\"", fleet->set_aside_applied);
    w.sample("dedupd_fleet_set_aside_total", "action=\"restored\"", fleet->set_aside_restored);
    counter("dedupd_fleet_published_total", "Shards published to the fleet.", fleet->published);
    counter("dedupd_fleet_replays_total", "Publishes the fleet already had (replays after a crash).", fleet->replays);
    counter("dedupd_fleet_drops_total", "Holds dropped in the fleet.", fleet->drops);
    counter("dedupd_fleet_failures_total", "Failed calls to the fleet primary.", fleet->failures);
    counter("dedupd_fleet_failovers_total", "Times this host's writes reached another server of the url's list.",
            fleet->failovers);
    if (fleet->last_reconcile) {
      w.family("dedupd_fleet_last_reconcile_seconds", "gauge", "Unix time the last anti-entropy pass ended.");
      w.sample("dedupd_fleet_last_reconcile_seconds", "", *fleet->last_reconcile);
    }
    if (fleet->last_contact) {
      w.family("dedupd_fleet_last_contact_seconds", "gauge", "Unix time of the last successful call to the primary.");
      w.sample("dedupd_fleet_last_contact_seconds", "", *fleet->last_contact);
    }
  }
  if (st.xet_downloads) render::write_xet_download_metrics(w, *st.xet_downloads);
  const std::vector<core::XetCacheStatus>& caches = st.xet_caches;
  if (!caches.empty()) {
    // One series per endpoint directory of a managed cache, beside its caps.
    auto per_cache = [&](std::string_view name, std::string_view type, std::string_view help, auto field) {
      w.family(name, type, help);
      for (const auto& x : caches) w.sample(name, "endpoint=\"" + http::prom_label(x.endpoint) + "\"", field(x));
    };
    per_cache("dedupd_xet_cache_files", "gauge", "Shard files the Xet client loads from this cache.",
              [](const core::XetCacheStatus& x) { return x.files; });
    per_cache("dedupd_xet_cache_bytes", "gauge", "Bytes of those files.",
              [](const core::XetCacheStatus& x) { return x.bytes; });
    per_cache("dedupd_xet_cache_max_bytes", "gauge", "The byte cap dedupd keeps.",
              [](const core::XetCacheStatus& x) { return x.max_bytes; });
    per_cache("dedupd_xet_cache_chunk_entries", "gauge", "Chunk entries the client indexes from them.",
              [](const core::XetCacheStatus& x) { return x.chunk_entries; });
    per_cache("dedupd_xet_cache_max_chunk_entries", "gauge", "The chunk-entry cap dedupd keeps.",
              [](const core::XetCacheStatus& x) { return x.max_chunk_entries; });
    per_cache("dedupd_xet_cache_merges_total", "counter", "Merged shards written.",
              [](const core::XetCacheStatus& x) { return x.merges; });
    per_cache("dedupd_xet_cache_evicted_total", "counter", "Files deleted to keep the caps.",
              [](const core::XetCacheStatus& x) { return x.evicted; });
    per_cache("dedupd_xet_cache_pending_deletions", "gauge", "Merged originals waiting for client processes to end.",
              [](const core::XetCacheStatus& x) { return x.pending_deletions; });
    per_cache("dedupd_xet_cache_pending_bytes", "gauge", "Bytes of those originals, counted against the byte cap.",
              [](const core::XetCacheStatus& x) { return x.pending_bytes; });
    per_cache("dedupd_xet_cache_live_clients", "gauge", "Client processes seen running at the last pass.",
              [](const core::XetCacheStatus& x) { return x.live_clients; });
    per_cache("dedupd_xet_cache_liveness_known", "gauge",
              "1 when the steward could tell which clients run; 0: all count as alive until replaced_grace.",
              [](const core::XetCacheStatus& x) { return std::uint64_t(x.liveness_established ? 1 : 0); });
    per_cache("dedupd_xet_cache_standing_by", "gauge", "1 when another dedupd holds this cache's lock.",
              [](const core::XetCacheStatus& x) { return std::uint64_t(x.standing_by ? 1 : 0); });
    // The metric keeps its name (dashboards and rules read it); the steward's word is "held back".
    per_cache("dedupd_xet_cache_set_aside", "gauge",
              "Files and merge groups held back after a failure, until a backoff.",
              [](const core::XetCacheStatus& x) { return std::uint64_t(x.held_back.size()); });
    per_cache("dedupd_xet_cache_last_pass_seconds", "gauge", "Unix time of the last pass.",
              [](const core::XetCacheStatus& x) { return x.last_pass; });
  }
  ctx.metrics.render(out);
  return r;
}

}  // namespace dedupd::daemon::api::routes
