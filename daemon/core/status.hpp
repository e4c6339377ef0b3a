// The daemon's own values that its HTTP layer shows: status, counters and the
// outcomes of admin actions. They belong to the daemon (the work loop makes
// them); daemon/api renders them and never the reverse.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/result.hpp"
#include "shard/hash.hpp"
#include "shard/keys.hpp"

namespace dedupd::daemon::core {

// GET /v1/status, minus the stats (the route reads those from the index).
// One endpoint directory of a managed Xet cache (`manage: xet-cache`), as
// the last pass of daemon/xetcache/steward found and left it.
struct XetCacheStatus {
  std::string endpoint;                                   // <cache root>/<endpoint>
  std::uint64_t files = 0, bytes = 0, chunk_entries = 0;  // what the client loads
  std::uint64_t max_bytes = 0, max_chunk_entries = 0;
  // Why the entry cap is what it is: "client_default", "xet_endpoint" (the
  // local Xet endpoint answers for the rest) or "configured".
  std::string max_chunk_entries_why;
  std::uint64_t merges = 0;             // merged shards written since start
  std::uint64_t merged_away = 0;        // originals deleted after a merge
  std::uint64_t evicted = 0;            // files deleted for the caps
  std::uint64_t pending_deletions = 0;  // originals waiting for client processes to end
  std::uint64_t live_clients = 0;       // client processes seen running at the last pass
  std::uint64_t last_pass = 0;          // unix s
  // Before -> after the last pass (files, bytes what the client loads).
  std::uint64_t files_before = 0, bytes_before = 0;
  std::uint64_t pending_bytes = 0;  // of the pending originals, counted against the caps
  std::uint64_t removed_kept = 0;   // files of shards an admin removed: never merged or deleted
  // Whether the steward could tell which clients run; when not, every
  // client counts as alive and only replaced_grace lets files go.
  bool liveness_established = false;
  std::string liveness_why;
  std::vector<std::int64_t> client_pids;  // the live clients seen
  // Another dedupd holds the cache's lock: this one stands by and changes nothing.
  bool standing_by = false;
  std::string lock_holder;             // "pid N on HOST" of whoever holds it
  std::vector<std::string> held_back;  // what failed, why, and when it is tried again
  std::string problem;                 // the endpoint as a whole could not be looked at
  // Merged shards holding content of a shard an admin removed after the
  // merge: their originals stay, and the admin should remove them too.
  std::vector<std::string> holds_removed;
  bool pass_running = false;          // a pass is under way in the steward's worker
  std::uint64_t pass_files_read = 0;  // files it has read so far
};

// What the steward's next pass would do to one endpoint, from a dry run
// (`dedupctl xet-cache plan`): the same rules, files read, nothing written.
struct XetCachePlanStep {
  std::string action;  // merge, delete (a merge's original), evict
  std::vector<std::string> files;
  std::string why;
  std::uint64_t bytes_saved = 0;    // on disk
  std::uint64_t entries_saved = 0;  // chunk entries the client indexes
};
struct XetCachePlan {
  std::string endpoint;
  bool liveness_established = false;
  std::string liveness_why;
  bool standing_by = false;
  std::string lock_holder;
  std::vector<XetCachePlanStep> steps;
  std::vector<std::string> held_back;  // what the pass would skip, and why
};

// The local Xet endpoint as dedupd knows it from xet_endpoint.config: the
// upstreams its nginx forwards to. The counts of its queries are the HTTP
// layer's (it sees the requests).
struct XetEndpointStatus {
  std::string config;           // the settings file
  bool config_present = false;  // absent: the defaults, as for the endpoint's script
  std::string problem;
  std::string hub_upstream, cas_upstream;
  std::uint32_t hub_port = 0, cas_port = 0;
};

// The endpoint's downloads (docs/XET-ENDPOINT.md, "Downloads") as its
// nginx reports each range request to the learning socket
// (daemon/learn/download_counts.hpp): bytes sent to clients by where they
// came from, requests by what became of them, since dedupd started.
struct XetTierHost {
  std::string host;  // as nginx names it: address:port
  bool up = false;   // the last request nginx sent it got an answer
  std::uint64_t answered = 0, failed = 0;
};
struct XetDownloadCounts {
  // By source: nginx's cache here, a host of the fleet's cache tier, the
  // CAS's storage (the internet).
  std::uint64_t bytes_local_cache = 0, bytes_tier = 0, bytes_internet = 0;
  std::uint64_t requests_local_cache = 0, requests_tier = 0, requests_internet = 0;
  std::uint64_t requests_refused = 0;  // 403: a range URL refused (the client asks again)
  std::uint64_t requests_failed = 0;   // any other error, or a body cut short
  std::vector<XetTierHost> tier;       // the tier's hosts nginx asked, by name
};
// The endpoint's cache directory (nginx's proxy_cache_path), as the last
// walk of it found it (daemon/jobs/download_cache.hpp).
struct XetDownloadCache {
  std::string dir;
  bool known = false;                  // walked, and readable
  std::string problem;                 // why not
  std::uint64_t bytes = 0, files = 0;  // on disk (allocated blocks)
  // Cache files gone between two walks: nginx's cache manager took them
  // out for its bound or their idle time (files that came and went between
  // two walks are not seen).
  std::uint64_t evictions = 0;
  std::uint64_t walked_at = 0;  // unix s
};
// What dedupd itself refused or could not fill of the endpoint's range
// requests (daemon/answers/download_faults.hpp), since it started: each
// reason named, with 0 when none happened.
struct XetDownloadFaults {
  std::vector<std::pair<std::string, std::uint64_t>> refused;      // range URLs refused (403), by reason
  std::vector<std::pair<std::string, std::uint64_t>> fill_failed;  // fills that cached nothing, by reason
  // Bytes the storage sent for fills that then failed (dropped, never
  // served; not in XetDownloadCounts' bytes, which are bytes served).
  std::uint64_t fill_failed_bytes = 0;
  // Cache files found changed or failing their check at a grant: removed
  // (their object filled again), never served.
  std::uint64_t cache_damaged = 0;
};
struct XetDownloadStatus {
  bool enabled = true;  // xet_endpoint.downloads.enabled
  XetDownloadCounts counts;
  XetDownloadCache cache;
  XetDownloadFaults faults;
};

// A file the index could not take for a reason that passes, waiting for
// its retry (daemon/ingest/waiting.hpp).
struct WaitingFile {
  std::string path;
  std::string rule, why;  // the last failure's
  std::uint64_t since = 0, age_s = 0;
  std::uint64_t attempts = 0;
  std::uint64_t next_retry_s = 0;  // 0: now
};
struct WaitingStatus {
  std::uint64_t count = 0;
  std::vector<WaitingFile> files;  // oldest first, the first few
};

// The file system under state_dir (the index's), read at each status.
struct StateDirSpace {
  bool known = false;  // statvfs answered
  std::uint64_t free_bytes = 0, size_bytes = 0;
  // An index write failed for lack of space (or the map's maximum) and no
  // write has gone through since.
  bool full = false;
};

// What became of a damaged index: found at start or by the scrub, moved
// aside and rebuilt from the shards dedupd knows.
struct IndexHealth {
  std::string state = "ok";  // ok, rebuilding, rebuilt
  std::string damage;        // what was found, empty when nothing
  std::string moved_to;      // where the damaged index was kept
  std::uint64_t found_at = 0;
  std::uint64_t rebuild_files_total = 0, rebuild_files_done = 0;
  // The background scrub (Index::scrub): passes since start, the one under
  // way, and what the last one found ("clean", or the first problem).
  bool scrub_enabled = false;
  bool scrub_running = false;
  std::uint64_t scrub_passes = 0;
  std::uint64_t scrub_items = 0;  // checked in the pass under way (or the last)
  std::uint64_t scrub_last_end = 0;
  std::string scrub_last_result;
  // The copies of learned shards a rebuild takes in (state_dir/learned).
  std::uint64_t learned_copies = 0, learned_copies_bytes = 0;
};

struct StatusInfo {
  std::string version;
  pid_t pid = 0;
  std::uint64_t uptime_s = 0;
  std::string socket;
  std::string state_dir;
  std::vector<std::string> watch;  // watched directories, as configured
  std::vector<XetCacheStatus> xet_caches;
  std::optional<XetEndpointStatus> xet_endpoint;  // with xet_endpoint.config set
  // Default member initializers: a brace list that stops before these
  // (tests, older callers) leaves them empty without a warning.
  WaitingStatus waiting{};
  StateDirSpace state_dir_space{};
  IndexHealth index_health{};
  // With an endpoint configured, or its reports heard.
  std::optional<XetDownloadStatus> xet_downloads{};
};

// Counters the daemon keeps for /metrics (monotonic since start).
struct DaemonCounters {
  std::uint64_t shards_ingested = 0;   // new shards written to the index
  std::uint64_t shards_duplicate = 0;  // valid, already indexed (idempotent)
  std::uint64_t shards_rejected = 0;   // failed validation
  std::uint64_t shards_expired = 0;    // entries dropped at expiry
  std::uint64_t shards_removed = 0;    // explicit removals
  std::uint64_t files_deleted = 0;     // shard files deleted after the grace
  std::uint64_t chunks_ingested = 0;   // chunk entries of new shards
  std::uint64_t rescans = 0;
};

// POST /v1/admin/reload: the file read again (empty: local defaults, no
// file, nothing to read) and the settings it changes that only a restart
// applies, each as "key (stays VALUE)".
struct ReloadResult {
  std::string config_file;
  std::vector<std::string> not_applied;
};

// POST /v1/admin/rescan
struct RescanResult {
  std::uint64_t scanned = 0;   // files seen
  std::uint64_t ingested = 0;  // newly indexed
  std::uint64_t rejected = 0;
};

// POST /v1/admin/purge: shards due now (dry run: that would be) and the files
// deleted. The route renders each shard as a summary read from the index.
struct PurgeResult {
  std::vector<shard::Hash> expired;
  std::vector<std::string> deleted_files;
};

// POST /v1/admin/ingest: one outcome per shard (a .caf bundle holds several).
struct IngestedShard {
  shard::Hash hash;
  bool added = false;  // false: the same content was already indexed
  std::uint64_t xorbs = 0;
  std::uint64_t chunks = 0;
  std::uint64_t files = 0;
};
// The outcomes, or the first validation problem (rule, offset, message),
// which the route answers with 422. Nothing is indexed on an error.
using UploadResult = base::Result<std::vector<IngestedShard>>;

// The key global-dedup replies are keyed with, and how long a reply stays
// valid for the client (its footer expiry = now + reply_lifetime_s).
// What became of a shard body the local Xet endpoint mirrored (learn/).
struct LearnHold {
  enum class Outcome : std::uint8_t {
    held,         // waiting for the CAS's status
    bad_id,       // not nginx's request id
    bad_cas,      // the CAS it names is no CAS URL
    not_a_shard,  // `error` says why
    full,         // no room: that shard is simply not learned
    duplicate,    // this request's body came already
    off,          // learning is off (no endpoint configured)
  };
  Outcome outcome = Outcome::off;
  std::optional<base::Error> error{};
};

// The learning path's counts since start (dedupctl status, /metrics).
struct LearnStats {
  bool listening = false;
  std::uint64_t held = 0, held_bytes = 0;               // bodies waiting for their status now
  std::uint64_t accepted = 0, refused = 0, failed = 0;  // statuses the CAS gave
  std::uint64_t expired = 0;                            // bodies whose status never came
  std::uint64_t learned = 0;                            // accepted shards new to the index
  std::uint64_t already_known = 0;                      // accepted shards it had
  std::uint64_t set_aside = 0;                          // shards set aside after refusals
  std::uint64_t restored = 0;                           // set-aside shards the CAS accepted again
  std::uint64_t refused_senders = 0, unmatched = 0, not_learned = 0;
};

// What the endpoint's download routes take from the live configuration
// (xet_endpoint.downloads; a reload applies both).
struct XetDownloadSettings {
  bool enabled = true;
  std::uint64_t max_url_lifetime_s = 600;
};

struct GlobalDedupKey {
  shard::Key key;
  std::uint64_t reply_lifetime_s = 7 * 24 * 3600;
  std::uint64_t reply_max_xorbs = 8192;         // xorbs of the source shard one reply may carry
  std::uint64_t reply_max_bytes = 64ull << 20;  // one reply: a whole 64 MiB upload shard fits
  // A query naming its CAS is answered by shards of unknown CAS too.
  bool unknown_cas_answers = false;
  // reply_lifetime_s for the local Xet endpoint's clients
  // (xet_endpoint.reply_expiry); last, so the fields before keep their places.
  std::uint64_t endpoint_reply_lifetime_s = 0;
};

}  // namespace dedupd::daemon::core
