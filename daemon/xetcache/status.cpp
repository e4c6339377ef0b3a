// What the steward shows (dedupctl xet-cache status): each endpoint's
// status as its last pass left it, and the pass under way.
#include <mutex>

#include "daemon/xetcache/pass_jobs.hpp"
#include "daemon/xetcache/steward.hpp"

namespace dedupd::daemon::xetcache {

void begin_endpoint_status(core::XetCacheStatus& st, const std::string& dir, const config::XetCacheConfig& config,
                           const dedupd::xetcache::LivenessVerdict& liveness, const std::vector<std::int64_t>& clients,
                           std::uint64_t now_wall) {
  st.endpoint = dir;
  st.max_bytes = config.max_bytes;
  st.max_chunk_entries = config.max_chunk_entries;
  st.max_chunk_entries_why = config.max_chunk_entries_source == config::CapSource::xet_endpoint ? "xet_endpoint"
                             : config.max_chunk_entries_source == config::CapSource::configured ? "configured"
                                                                                                : "client_default";
  st.live_clients = liveness.alive_clients;
  st.client_pids = clients;
  st.liveness_established = liveness.established;
  st.liveness_why = liveness.why;
  st.standing_by = false;
  st.lock_holder.clear();
  st.last_pass = now_wall;
  st.problem.clear();
}

void end_endpoint_status(EndpointState& ep, const Eviction& eviction, const Coverage& coverage,
                         std::uint64_t now_mono) {
  core::XetCacheStatus& st = ep.status;
  st.holds_removed.clear();
  for (const auto& [merged, original] : ep.holds_removed)
    st.holds_removed.push_back(merged + " holds the content of " + original +
                               ", which an admin removed: remove that merged shard too");
  // What the client loads now: the rest and what was not up for eviction
  // (a merged file just written is described once indexed, next pass).
  st.files = eviction.left.files + eviction.fixed.files;
  st.bytes = eviction.left.bytes + eviction.fixed.bytes;
  st.chunk_entries = eviction.left.chunk_entries + eviction.fixed.chunk_entries;
  st.pending_deletions = ep.pending.size();
  st.pending_bytes = coverage.pending.bytes;
  st.held_back = ep.held_back.describe(now_mono);
}

std::vector<core::XetCacheStatus> CacheSteward::status() const {
  std::lock_guard lock(status_mu_);
  std::vector<core::XetCacheStatus> out = published_;
  if (out.empty() && running_) {
    // The first pass publishes only when it ends, and over a large cache
    // that is when its progress matters most: the roots, with the pass.
    std::lock_guard config(config_mu_);
    for (const auto& root : next_roots_) {
      core::XetCacheStatus st;
      st.endpoint = root.native();
      out.push_back(std::move(st));
    }
  }
  for (auto& st : out) {
    st.pass_running = running_;
    st.pass_files_read = files_read_;
  }
  return out;
}

}  // namespace dedupd::daemon::xetcache
