// What dedupd runs with: read from YAML (config/load.hpp) or built from local
// defaults for a trial run. Plain values; every field has a safe default.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace dedupd::daemon::config {

// What dedupd may do in a watched tree beyond indexing and expiring it.
enum class Manage : std::uint8_t {
  none,
  // The tree is a Xet client's cache (HF_XET_CACHE): dedupd merges the small
  // shards of its shard-cache/ directories and keeps them under caps
  // (xetcache/). Opt-in: it writes files the client will load.
  xet_cache,
};

struct WatchDir {
  std::filesystem::path path;
  bool recursive = true;  // the Xet cache nests <endpoint>/shard-cache/
  Manage manage = Manage::none;
  // The CAS every shard under it belongs to (normalized; "": say it by the
  // client's cache directory, else unknown). For shards a script drops in.
  std::string cas{};
  bool operator==(const WatchDir&) const = default;
};

struct ExpiryConfig {
  // Grace between a shard's expiry and the deletion of its file; nullopt
  // keeps files forever. 7 days matches the Xet client.
  std::optional<std::chrono::seconds> delete_after = std::chrono::hours(24 * 7);
  // Cap on the total size of files of expiring shards; oldest go first.
  std::optional<std::uint64_t> max_bytes;
  // Safety tick: the timer re-checks at least this often even when nothing
  // is due, so a wall-clock jump cannot leave an expiry unnoticed for long.
  std::chrono::seconds check_interval = std::chrono::minutes(5);
};

// What clients may ask of the socket (daemon/api/http/server.hpp has the why of
// each default).
struct LimitsConfig {
  std::uint64_t max_body_bytes = 256ull << 20;       // an uploaded shard or bundle
  std::uint64_t max_query_body_bytes = 10ull << 20;  // a batch query (100,000 hashes fit)
  std::uint64_t max_body_memory = 288ull << 20;      // all bodies held at once
  unsigned max_connections = 2048;
  std::chrono::seconds request_timeout = std::chrono::seconds(30);
  std::chrono::seconds header_timeout = std::chrono::seconds(10);  // to send a request's headers
};

struct GlobalDedupConfig {
  std::chrono::seconds key_rotation = std::chrono::hours(24);      // how long one reply key lives
  std::chrono::seconds reply_expiry = std::chrono::hours(24 * 7);  // expiry written into replies
  // One reply carries the chunk's source shard up to these bounds; the
  // defaults fit a whole 64 MiB upload shard of the Xet client.
  std::uint64_t reply_max_xorbs = 8192;
  std::uint64_t reply_max_bytes = 64ull << 20;
};

// Where the steward's chunk-entry cap comes from, for whoever asks why it
// holds what it holds.
enum class CapSource : std::uint8_t {
  client_default,  // the client's own cap
  xet_endpoint,    // small, because the local Xet endpoint answers for the rest
  configured,      // xet_cache.max_chunk_entries
};

// The entry cap of a managed cache with the local Xet endpoint on: a client
// session starts in a few tens of milliseconds on it, and dedupd answers for
// what no longer fits (docs/XET-ENDPOINT.md has the measurement).
inline constexpr std::uint64_t kXetEndpointCacheEntries = 1ull << 20;

// How dedupd looks after the Xet caches of `manage: xet-cache` entries
// (daemon/xetcache/steward.hpp). The caps default to the client's own
// (xetcache/constants.hpp), which it keeps only at session start; the entry
// cap to kXetEndpointCacheEntries when xet_endpoint.config is set.
struct XetCacheConfig {
  std::chrono::seconds interval = std::chrono::minutes(1);  // between passes
  // How long a merge's originals may wait for the client processes that
  // may still read them; then they go (a running session re-uploads what it
  // would have found in them, it never fails).
  std::chrono::seconds replaced_grace = std::chrono::hours(1);
  std::uint64_t max_bytes = 16'000'000'000ull;
  std::uint64_t max_chunk_entries = 64ull << 20;
  CapSource max_chunk_entries_source = CapSource::client_default;
};

// The group the package's endpoint unit runs as (packaging/systemd/sysusers.conf).
inline constexpr const char* kPackageEndpointGroup = "dedupd-xet";

// Downloads through the local Xet endpoint (docs/XET-ENDPOINT.md,
// "Downloads"): dedupd renames the range URLs of the CAS's reconstruction
// answers to the endpoint's own, which nginx caches by xorb and range.
struct XetDownloadsConfig {
  // On by default: only the endpoint's nginx asks for a rewrite, so this
  // acts only where an endpoint runs, whose user wants a model fetched
  // once; every failure of the path falls back on the client fetching
  // directly. Off: the CAS's answers go out as they came.
  bool enabled = true;
  // A rewritten range URL expires no later than the CAS's own URL, and no
  // later than this from the rewrite (for CAS URLs that name no expiry).
  std::chrono::seconds max_url_lifetime = std::chrono::minutes(10);
  // The CAS URLs held in memory for outstanding range URLs (a few hundred
  // bytes each); past it the oldest go, and their range URLs are refused
  // (the client asks the reconstruction again).
  std::uint64_t max_held_urls = 100'000;
  // The key range URLs are signed with; empty: state_dir/xet-download.key.
  // A fleet's cache tier shares one file.
  std::filesystem::path key_file;
  bool operator==(const XetDownloadsConfig&) const = default;
};

// The local Xet endpoint in front of this dedupd (docs/XET-ENDPOINT.md).
// Set, dedupd shows its upstreams and keeps managed caches small; the
// endpoint's nginx works without it, as dedupd counts its queries either way.
struct XetEndpointConfig {
  // Its settings file (packaging/xet-endpoint/xet-endpoint.conf), read at
  // each status for the upstreams; empty: dedupd knows of no endpoint. The
  // package's by default (installed_defaults), "xet_endpoint:" alone clears it.
  std::filesystem::path config;
  // Shards of unknown CAS answer the endpoint's queries too. Off: an
  // answer from a shard of another CAS fails the client's upload, and
  // dedupd cannot tell such a shard from one of the endpoint's CAS.
  bool unknown_cas_answers = false;
  // Who the endpoint is: its nginx's group (besides root and dedupd's own
  // user), the only one who may teach dedupd a shard (docs/XET-ENDPOINT.md,
  // "Learning"). Unset: the package's kPackageEndpointGroup where the system
  // has it, else root and dedupd's user only.
  std::optional<std::string> group;
  // The datagram socket its nginx reports the CAS's statuses on; empty:
  // "dedupd-learn.sock" beside the API socket. Under systemd, dedupd.socket
  // holds it and passes it, and this is not used.
  std::filesystem::path learn_socket;
  // The expiry written into the answers the endpoint's clients get, from
  // now. The Xet client keeps an answer in its shard cache and dedups
  // against it without asking again until a process finds it expired; a
  // xorb the CAS lost since then fails every upload that reuses it. At 0
  // an answer serves the process that asked and no later one, which asks
  // again (docs/XET-ENDPOINT.md, "When the CAS refuses").
  std::chrono::seconds reply_expiry{0};
  XetDownloadsConfig downloads;
  bool enabled() const { return !config.empty(); }
};

// The fleet index on PostgreSQL (docs/FLEET.md). Off while url is empty.
// The url may carry a password: it is never logged or printed.
struct FleetConfig {
  std::string url;   // libpq conninfo or URI, several hosts allowed
  std::string host;  // this host's name in the fleet (default: the hostname)
  // How long an answer waits for the fleet part before it goes out as the
  // local answer marked "fleet": "unavailable".
  std::chrono::milliseconds lookup_timeout{50};
  // Anti-entropy: how often this host compares the shards the fleet lists
  // for it with its live local shards (and once at start), and the most
  // shards of each side one round compares (a pass is several rounds).
  std::chrono::seconds reconcile_interval{600};
  std::uint32_t reconcile_batch = 10000;
  // What lookups keep of the fleet's xorbs for the next ones (hashes, keys,
  // holders, the CAS blocks of xorbs hit often), in bytes; one cache for
  // every connection (fleet/xorb_cache.hpp). 0: nothing is kept.
  std::uint64_t lookup_cache = std::uint64_t(16) << 20;
  // The most the key filters take together (fleet/key_filters.hpp): one
  // filter per live key of the prefixes stored under it, and the raw one,
  // so that a miss asks nothing. They take what the fleet's entries need,
  // up to this; past it, filters get thinner (more forms asked), then none.
  static constexpr std::uint64_t kDefaultKeyFilterMemory = std::uint64_t(512) << 20;  // fleet::kDefaultKeyFilterBytes
  std::uint64_t key_filter_memory = kDefaultKeyFilterMemory;
  bool enabled() const { return !url.empty(); }
  bool operator==(const FleetConfig&) const = default;
};

// The index's in-memory side (index/index.hpp, Options).
struct IndexConfig {
  // The most the chunk filters take together; past what fits they saturate
  // and lookups search more absent forms (daemon/README.md has the trade).
  std::uint64_t filter_memory = std::uint64_t(512) << 20;
  // Time between the ends of two passes of the scrub (daemon/README.md,
  // "When things go wrong"); nullopt: "never". The first pass starts once
  // the files found at start are in.
  std::optional<std::chrono::seconds> scrub_interval = std::chrono::hours(24);
};

// The opt-in TCP listener for Prometheus (docs/OPERATIONS.md, "Monitoring"):
// GET /metrics and /healthz as the socket answers them, nothing else. Off
// while `listen` is empty. Bound once at start: a change needs a restart.
struct MetricsConfig {
  std::string listen;  // "HOST:PORT" as written (for messages); "": off
  std::string host;    // the IP address alone (localhost: 127.0.0.1)
  std::uint16_t port = 0;
  bool enabled() const { return !listen.empty(); }
  bool operator==(const MetricsConfig&) const = default;
};

struct Config {
  std::filesystem::path state_dir;  // the LMDB index lives in state_dir/index
  std::filesystem::path socket;
  std::vector<WatchDir> watch;
  ExpiryConfig expiry;
  std::optional<std::filesystem::path> quarantine_dir;
  std::optional<std::string> admin_group;
  std::string log_level = "info";
  LimitsConfig limits;
  GlobalDedupConfig global_dedup;
  XetCacheConfig xet_cache;
  XetEndpointConfig xet_endpoint;
  FleetConfig fleet;
  IndexConfig index;
  MetricsConfig metrics;

  std::filesystem::path index_dir() const { return state_dir / "index"; }
  std::filesystem::path key_file() const { return state_dir / "global-dedup.key"; }
  std::filesystem::path download_key_file() const {
    return xet_endpoint.downloads.key_file.empty() ? state_dir / "xet-download.key" : xet_endpoint.downloads.key_file;
  }
};

// Values a config file does not set: the installed layout.
Config installed_defaults();

// Absolute-or-as-given, normalised, without a trailing separator, so paths
// compare equal however the user spelled them.
std::filesystem::path clean_path(const std::filesystem::path& p);

// A local trial: index in DIR/index, watched DIR/incoming, socket
// DIR/dedupd.sock. DIR is made absolute so later chdirs do not matter.
Config local_defaults(const std::filesystem::path& dir);

}  // namespace dedupd::daemon::config
