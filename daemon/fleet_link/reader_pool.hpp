// The fleet half of an answer, for any HTTP thread. A request never
// connects: a connector thread keeps a small pool of Readers that are
// connected, checked (schema version, prepared lookup) and idle, and a
// request borrows one. When every Reader is lent (a burst of clients, or
// the first requests after a start) while the link is up and the server
// answers (fleet::Patience), it waits for one (another request's, back in
// a few ms, or a new one the connector makes) up to lookup_timeout, at
// most kMaxLeaseWait: more clients than the pool has connections is not an
// outage, and answering them "unavailable" would tell users the fleet is
// down when it is busy. While the link is down, or the server has not
// answered, it answers "unavailable" at once. Past that wait, the only wait on the
// request path is the statement itself, bounded by lookup_timeout; DNS,
// TCP and TLS handshakes, libpq's whole-second connect_timeout and a server
// that accepts and never answers all cost the connector thread, never a
// request.
//
// lookup_timeout bounds the wait for a database that does not answer, not
// the work of one that does. While lookups are in flight, a heartbeat thread
// pings the server on a connection of its own, and every statement that
// comes back counts too (fleet::Patience): a lookup still running at its
// bound waits on while the server answered within the last lookup_timeout
// (at least kMinSilence, more while pings are slow), up to lookup_timeout plus kWorkPerHash for each
// hash it asks (a 4,096-hash block of a stream on a busy host; a one-hash
// answer gets the bound alone). A stopped or unreachable server answers no
// ping, so a wait ends one silence after its last answer.
//
// A Reader whose call failed is dropped, never lent again. A timeout while
// the server does not answer, or a lost connection, also empties the pool
// (its other connections lead to the same stopped or unreachable server)
// and marks the link down until the connector has connected again, so an
// outage costs at most one bound per request in flight when it starts and
// nothing after. A lookup that outlasts even its work bound while the
// server answers drops its Reader only: a slow answer is not an outage.
// Requests hold the pool's lock only to take or return a Reader: a stuck
// connection holds up its own request and no other.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "daemon/fleet_link/answers.hpp"
#include "daemon/fleet_link/state.hpp"
#include "daemon/fleet_link/wake_fd.hpp"
#include "fleet/fleet.hpp"
#include "fleet/xorb_cache.hpp"
#include "shard/cas_scope.hpp"

namespace dedupd::daemon::fleet_link {

// What every Reader of the pool shares, in bytes: the xorb cache
// (fleet.lookup_cache) and the key filters (fleet.key_filter_memory).
struct LookupMemory {
  std::int64_t xorb_cache = fleet::kDefaultXorbCacheBytes;
  std::int64_t key_filters = fleet::kDefaultKeyFilterBytes;
  bool operator==(const LookupMemory&) const = default;
};

class FleetLookup {
 public:
  // An empty url: no fleet; nothing connects until configure() gives one.
  // `kept_filters`: the file that keeps the key filters across restarts
  // (daemon/fleet_link/kept_filters.hpp; empty: none).
  FleetLookup(fleet::ConnectOptions options, std::chrono::milliseconds timeout, LookupMemory memory = {},
              std::filesystem::path kept_filters = {});
  ~FleetLookup();  // stops the connector and the keeper (at most one connect_timeout)
  FleetLookup(const FleetLookup&) = delete;
  FleetLookup& operator=(const FleetLookup&) = delete;

  // A changed url (or host name, or memory) drops every idle Reader and
  // reconnects; a changed bound applies to the next call.
  void configure(fleet::ConnectOptions options, std::chrono::milliseconds timeout, LookupMemory memory = {});
  std::chrono::milliseconds timeout() const;

  // Every fleet location of each raw hash, in one round trip. With `busy`:
  // when no Reader is idle while the link is up, *busy is set and nothing
  // is asked (the pool grows for next time), rather than answering
  // unavailable.
  Reach chunks(std::span<const fleet::Hash> raw, fleet::ChunkAnswers& out, bool* busy = nullptr);
  Reach xorb(const fleet::Hash& h, std::optional<fleet::XorbAnswer>& out);
  Reach file(const fleet::Hash& h, std::optional<fleet::FileAnswer>& out);
  Reach files_with_sha256(const fleet::Hash& sha256, std::vector<fleet::Hash>& out);
  // The source shard of a chunk this host lacks, for a global-dedup reply
  // (fleet::Reader::shard_xorbs picks it among the shards holding the
  // chunk): two statements on one Reader within ONE bound, so the reply
  // waits no longer than any other answer. Only shards `scope` admits
  // (nullopt: any), and not `set_aside` here, are candidates.
  Reach source_shard(const fleet::Hash& raw_chunk, const fleet::ShardXorbBounds& bounds, std::uint64_t now,
                     const std::optional<shard::CasScope>& scope,
                     const std::function<bool(const fleet::Hash& shard)>& set_aside,
                     std::optional<fleet::ShardXorbs>& out);
  // Status takes a longer bound and may connect for itself: it is an
  // operator's question (dedupctl fleet status), not a lookup.
  Reach status(fleet::Status& out, std::string& error);

  // The last failure's text (never the url), for status.
  std::string last_error() const;
  LookupMemoryInUse memory_in_use() const;

  // Connections kept ready; the pool grows toward this when requests find
  // it empty while the link is up.
  static constexpr std::size_t kMaxIdle = kFleetPoolMax;
  static constexpr auto kFirstBackoff = std::chrono::milliseconds(100);
  static constexpr auto kMaxBackoff = std::chrono::milliseconds(2000);
  // The most a lookup may work past lookup_timeout while the server
  // answers, per hash asked, so a 4,096-hash block may take about 4 s and a
  // one-hash answer no more than the bound plus 1 ms. A hash costs a loaded
  // 2-core host about 7 us raw, and five forms under four keys; 250 us was
  // outlasted at 10 M entries with 4 keys beside a CI run (load 4.5-7)
  // while the server answered every ping, and those blocks answered
  // locally only. A stopped server answers no ping: this never applies.
  static constexpr auto kWorkPerHash = std::chrono::microseconds(1000);
  // The heartbeat pings this often (a quarter of the bound, within these).
  static constexpr auto kMinBeat = std::chrono::milliseconds(2);
  // How long the server may stay silent, pings and statements alike, and
  // still count as answering: the bound, but no less than kMinSilence, as
  // on a busy 2-core host PostgreSQL may get no CPU for tens of ms, and a
  // block taken for an outage costs the whole pool and its cache. On a
  // host so busy that pings themselves take long (this process or the
  // server starved of CPU: a load of 7 per core takes a ping to hundreds of
  // ms), four times the slowest recent ping, up to kMaxSilence: what an
  // outage costs a lookup in flight when it starts.
  static constexpr auto kMinSilence = std::chrono::milliseconds(250);
  static constexpr auto kMaxSilence = std::chrono::milliseconds(2000);
  static std::chrono::milliseconds silence_for(std::chrono::milliseconds timeout,
                                               std::chrono::milliseconds slowest_ping = {}) {
    const auto starved = std::clamp<std::chrono::milliseconds>(4 * slowest_ping, kMinSilence, kMaxSilence);
    return std::max<std::chrono::milliseconds>(timeout, starved);
  }
  static constexpr auto kMaxBeat = std::chrono::milliseconds(250);
  // The longest a request waits for a Reader while every one is lent and
  // the link is up (lookup_timeout when shorter): a Reader comes back in a
  // few ms unless its server stopped answering, and a bound of seconds
  // must not let one stuck connection hold up every request behind it.
  static constexpr auto kMaxLeaseWait = std::chrono::seconds(1);

 private:
  struct Lease {
    std::unique_ptr<fleet::Reader> reader;
    std::uint64_t generation = 0;
    std::chrono::milliseconds timeout{};
  };
  // A Reader, or nullopt: the link down, or (with `busy`) none idle now,
  // *busy saying whether the link is up, every Reader lent out; without
  // `busy`, none came back or was made within the lease wait.
  std::optional<Lease> borrow(bool* busy = nullptr);
  void settle(Lease lease, const std::optional<fleet::Error>& error);
  // `f` on a borrowed Reader, under a patient deadline for `work_hashes`.
  template <class F>
  Reach with_reader(F&& f, bool* busy = nullptr, std::size_t work_hashes = 1);
  void run_connector();
  void run_heartbeat();
  void run_filter_keeper();

  mutable std::mutex mu_;
  fleet::ConnectOptions options_;  // under mu_
  // One set of key filters for every Reader in the pool: each filter is
  // built once, from one connection, and its memory does not grow with the
  // pool. Under mu_ (the pointer).
  // Built and kept up to date by the keeper thread on a connection of its
  // own, never lent, so a lookup finds them complete rather than spending
  // its bound on them (at 10 M keyed entries they take 0.7 s to build).
  std::shared_ptr<fleet::KeyFilters> key_filters_;
  std::filesystem::path kept_filters_file_;
  LookupMemory memory_;  // under mu_
  // One xorb cache (hashes, holders, CAS blocks of hits) for the whole pool:
  // a block one Reader fetched answers on the others. Started again when
  // the link comes back after being down, or the url changes (a restored database or another
  // server may hand out the same row ids). Under mu_ (the pointer).
  std::shared_ptr<fleet::XorbCache> xorb_cache_;
  std::chrono::milliseconds timeout_;                 // under mu_
  std::uint64_t generation_ = 0;                      // under mu_; bumped by configure() and by an outage
  std::vector<std::unique_ptr<fleet::Reader>> idle_;  // under mu_; each connected and checked
  std::size_t want_idle_ = 1;                         // under mu_
  std::size_t in_use_ = 0;                            // under mu_; lent out now
  bool down_ = false;       // under mu_; the last connect or call failed: the connector retries with backoff
  bool stopping_ = false;   // under mu_
  std::string last_error_;  // under mu_

  // When the server last answered (a statement or a heartbeat ping), and
  // how long a silence means it does not: lookup_timeout.
  fleet::Patience patience_;
  std::condition_variable beat_;  // under mu_: lookups in flight, or stopping
  std::condition_variable keep_;  // under mu_: a new url or memory, or stopping
  // Under mu_: the keeper has read the kept filters (or had none to read).
  bool kept_filters_read_ = false;
  std::condition_variable kept_read_;
  // Under mu_: a Reader is idle again (returned or made), the link went
  // down, or the pool was emptied or is stopping: borrowers waiting look.
  std::condition_variable lendable_;

  WakeFd wake_;  // posted when the pool needs a connection, or to stop
  std::thread connector_;
  std::thread heartbeat_;
  std::thread filter_keeper_;
};

}  // namespace dedupd::daemon::fleet_link
