// The seam between the HTTP API and the rest of the daemon. Routes read the
// index directly (LMDB readers never wait for the writer); everything else
// (status, admin actions, the global-dedup key) goes through this interface,
// which the daemon core implements. Admin methods are called from HTTP worker
// threads and block until the daemon's work loop has done the job, so the
// index keeps exactly one writer.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "daemon/fleet/answers.hpp"
#include "daemon/fleet/state.hpp"
#include "index/types.hpp"
#include "shard/hash.hpp"
#include "shard/keys.hpp"
#include "shard/result.hpp"

namespace dedupd::index {
class Index;
}

namespace dedupd::daemon {

// GET /v1/status, minus the stats (the route reads those from the index).
struct StatusInfo {
  std::string version;
  pid_t pid = 0;
  std::uint64_t uptime_s = 0;
  std::string socket;
  std::string state_dir;
  std::vector<std::string> watch;  // watched directories, as configured
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

// DELETE /v1/shard/<hash>. not_live: known, but already removed or expired.
enum class RemoveResult { removed, not_found, not_live };

// POST /v1/admin/ingest: one outcome per shard (a .caf bundle holds several).
struct IngestedShard {
  shard::Hash hash;
  bool added = false;  // false: the same content was already indexed
  std::uint64_t xorbs = 0;
  std::uint64_t chunks = 0;
  std::uint64_t files = 0;
};
// Either the outcomes, or the first validation problem (rule, offset,
// message), which the route answers with 422.
using IngestResult = std::variant<std::vector<IngestedShard>, shard::Error>;

// The key global-dedup replies are keyed with, how long a reply stays
// valid for the client (its footer expiry = now + reply_lifetime_s), and
// the bounds on one reply (daemon/api/global_dedup.hpp).
struct GlobalDedupKey {
  shard::Key key;
  std::uint64_t reply_lifetime_s = 7 * 24 * 3600;
  std::uint64_t reply_max_xorbs = 8192;
  std::uint64_t reply_max_bytes = 64ull << 20;
};

class Service {
 public:
  virtual ~Service() = default;

  // The open index, or nullptr while it is not open yet (routes answer 503).
  // The pointer stays valid until the ApiServer is stopped.
  virtual const index::Index* index() const = 0;

  virtual StatusInfo status() const = 0;
  virtual DaemonCounters counters() const = 0;
  virtual GlobalDedupKey global_dedup_key() const = 0;

  // Admin actions; block until the work loop has finished them. May throw
  // std::exception on an internal failure (answered as 500 and logged).
  virtual RescanResult rescan() = 0;
  virtual PurgeResult purge(bool dry_run) = 0;
  virtual RemoveResult remove(const shard::Hash& shard) = 0;
  // `name` is the uploaded file's name (?name=), possibly empty; it tells a
  // bundle (".caf") from a shard and names the source in logs and records.
  virtual IngestResult ingest(std::vector<std::uint8_t> bytes, std::string name) = 0;

  // ---- the fleet (daemon/fleet/): what a daemon without one answers ----------
  // Each waits at most the configured lookup bound, any thread.
  // For the queries of `raw` without a local location: the fleet's, in one round trip.
  virtual fleet_link::Reach fleet_misses(std::span<const shard::Hash> raw, const index::BatchResult& local,
                                         fleet_link::FleetMisses& out) {
    (void)raw, (void)local;
    out = {};
    return fleet_link::Reach::off;
  }
  virtual fleet_link::Reach fleet_xorb(const shard::Hash&, std::optional<fleet::XorbAnswer>&) {
    return fleet_link::Reach::off;
  }
  virtual fleet_link::Reach fleet_file(const shard::Hash&, std::optional<fleet::FileAnswer>&) {
    return fleet_link::Reach::off;
  }
  virtual fleet_link::Reach fleet_sha256(const shard::Hash&, std::vector<shard::Hash>&) {
    return fleet_link::Reach::off;
  }
  // The publisher's state; nullopt without a fleet.
  virtual std::optional<fleet_link::PublisherState> fleet_state() const { return std::nullopt; }
  // The whole fleet as the database sees it (a longer bound: an operator asks).
  virtual fleet_link::Reach fleet_status(fleet::Status&, std::string& error) {
    error = "no fleet configured";
    return fleet_link::Reach::off;
  }
  // Admin: drops every hold of a host that is gone for good. True when the
  // host was known. May throw std::exception when the fleet cannot be reached.
  virtual bool fleet_forget_host(const std::string& name) {
    (void)name;
    throw std::runtime_error("no fleet configured");
  }
};

}  // namespace dedupd::daemon
