// The fleet index: build hosts share one chunk index on PostgreSQL (libpq).
// Writes go to the primary; reads may go to a hot standby. Depends on shard/
// and libpq only: no sockets, config or logging. Errors are values whose
// rule starts with "fleet." (see fleet/errors.hpp). docs/FLEET.md has the
// design and the schema.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fleet/deadline.hpp"
#include "fleet/errors.hpp"
#include "shard/chunk_answers.hpp"
#include "shard/hash.hpp"
#include "shard/keys.hpp"
#include "shard/reader.hpp"

namespace dedupd::fleet {

using shard::Hash;
using shard::Key;

class XorbCache;   // fleet/xorb_cache.hpp
class KeyFilters;  // fleet/key_filters.hpp

struct ConnectOptions {
  std::string url;               // libpq conninfo or URI; may list several hosts
  std::string host_name;         // this host's name in the fleet: [A-Za-z0-9._-], 1-253 characters
  std::string software_version;  // the dedupd release, recorded with the host ("" none)
  std::chrono::milliseconds connect_timeout{2000};
  // After a failed or timed-out read, the Reader answers fleet.unavailable at
  // once for this long instead of trying again, so an outage costs each
  // request nothing rather than a deadline each.
  std::chrono::milliseconds retry_after{1000};
  // Bounds each statement of a Writer (a whole shard's COPY included), so a
  // stopped primary costs the publisher this long, not forever. 0: unbounded.
  std::chrono::milliseconds statement_timeout{60000};
  // A descriptor the Writer's waits also poll: readable, the statement or
  // connect in flight is abandoned at once, as past its bound (the
  // publisher's stop: a lock or a stalled primary must not hold up a
  // `systemctl stop` for the statement timeout, past TimeoutStopSec). -1: none.
  int interrupt_fd = -1;
  // The Reader keeps a filter of the prefixes stored under each live key and
  // asks only for the keyed forms it may hold (docs/FLEET.md, "Key
  // filters"). Off: every form of every query is asked (tests compare both).
  bool key_filters = true;
  // The same for the raw forms: a filter of the prefixes of every raw chunk
  // entry in the fleet, complete for the "raw generation" (each publishing
  // host's raw_publish row; fleet/key_filters.hpp), within at most half of the
  // filters' budget, so a miss is usually asked nothing. Off: every raw
  // form is asked (the key filter tests count forms without it).
  bool raw_filter = true;
  // The key filters, shared by the Readers given the same set: a pool
  // builds each filter once, not once per connection (fleet/key_filters.hpp).
  // A key whose filter would not fit the set's budget even at its thinnest
  // is asked in every form, as without filters: slower, the same answers.
  // Null: each Reader its own set of kDefaultKeyFilterBytes.
  std::shared_ptr<KeyFilters> key_filters_shared;
  // A lookup's answer names the fleet shards holding each hit with their
  // holders. The Reader keeps them per xorb and reads them again once they
  // are older than this when an answer is put together (docs/FLEET.md,
  // "Caches"); 0: read with every lookup.
  std::chrono::milliseconds holders_max_age{1000};
  // What a lookup hit needs of its xorb (hash, key, holders, and the whole
  // CAS block of a xorb hit often), kept for the Readers that share this
  // cache (fleet/xorb_cache.hpp). Null: the Reader keeps its own of
  // kDefaultXorbCacheBytes and starts it again on each new connection; a
  // shared one is started again by its owner (the daemon's pool, after an
  // outage). A cache of 0 bytes keeps nothing: every hit asks for its xorb
  // and chunk entry.
  std::shared_ptr<XorbCache> xorb_cache;
};

// 512 MiB (fleet.key_filter_memory), a bound, as index.filter_memory is for
// the local chunk filters: the filters take what the fleet's entries need
// (3 bytes an entry at 16 bits, with half as much room again to grow), so
// their memory follows the fleet's size up to it, whatever the number of
// Readers sharing it. The raw filter takes at most half: 16 bits to about
// 89 M raw entries, 4 bits to about 358 M. At 64 MiB, until 0.2.0, a fleet
// of 100 M entries left its raw filter out and misses ran at 0.59x bare.
inline constexpr std::int64_t kDefaultKeyFilterBytes = std::int64_t(512) << 20;
// A set of key filters for Readers to share, within `budget_bytes`.
std::shared_ptr<KeyFilters> make_key_filters(std::int64_t budget_bytes = kDefaultKeyFilterBytes);
// 16 MiB: about 80 CAS blocks of 4,096 chunks (196 KB each), whatever the
// number of Readers sharing it.
inline constexpr std::int64_t kDefaultXorbCacheBytes = std::int64_t(16) << 20;

// The schema version this build creates and understands.
std::uint32_t known_schema_version();

struct MigrateOutcome {
  std::uint32_t from = 0;  // 0: there was no schema
  std::uint32_t to = 0;
  bool changed() const { return from != to; }
};

enum class PublishResult : std::uint8_t {
  added,         // a new fleet shard, with this host as its first holder
  new_holder,    // the shard was there (another host published it); this host now holds it too
  already_held,  // this host held it already (a replay)
};
const char* to_string(PublishResult r);

// Connects to the primary, creates or upgrades the schema and reports what
// it did (`dedupd --fleet-migrate`); registers no host. A newer schema is
// refused naming both versions (fleet.schema_newer).
Result<MigrateOutcome> migrate(const ConnectOptions& options, bool final = false);

struct PublishOutcome {
  PublishResult result = PublishResult::added;
  // What this publish added to the fleet (shared xorbs and files add nothing).
  std::uint64_t new_xorbs = 0, new_chunk_entries = 0, new_files = 0;
  // The shard was there and learned a CAS of this publish it lacked.
  bool cas_learned = false;
};

// One fleet shard and the hosts that hold it.
struct FleetShardRef {
  Hash shard{};
  std::vector<std::string> holders{};  // host names, sorted
  std::string cas{};                   // the CAS it belongs to; empty: unknown
};

// One place a chunk lives in the fleet. byte_end is exclusive.
struct ChunkLocation : shard::ChunkPlace {
  bool keyed = false;  // the shards store this xorb's chunk hashes under `key`
  Key key{};
  std::uint32_t shard_set = 0;  // index into ChunkAnswers::shard_sets
};

// Answers of a batch lookup, flat as index::BatchResult (shard/chunk_answers.hpp).
struct ChunkAnswers : shard::FlatAnswers<ChunkLocation, FleetShardRef> {};

// One stored form of a xorb (raw, or keyed under `key`), its CAS block
// exactly as the publishing shard stored it (header + 48-byte chunk entries).
struct XorbForm {
  bool keyed = false;
  Key key{};
  std::vector<std::uint8_t> cas_block{};
  std::vector<FleetShardRef> shards{};
};
struct XorbAnswer {
  Hash hash{};
  std::vector<XorbForm> forms{};
};

// A file's block exactly as the publishing shard stored it (header, terms,
// verification entries, metadata extension): shard::FileBlock reads it.
struct FileAnswer {
  Hash hash{};
  std::vector<std::uint8_t> block{};
  std::optional<Hash> sha256{};
  std::vector<FleetShardRef> shards{};
};

// A fleet shard's xorbs for a global-dedup reply (Reader::shard_xorbs).
// A candidate: a shard that holds the queried chunk, in `xorb`.
struct ShardCandidate {
  Hash shard{};
  Hash xorb{};
};
struct ShardXorbBounds {
  std::uint64_t max_xorbs = 0;
  std::uint64_t max_block_bytes = 0;  // CAS blocks together
};
struct ShardXorb {
  Hash hash{};
  std::vector<std::uint8_t> cas_block{};  // as the shard stored it
};
struct ShardXorbs {
  Hash shard{};                           // the candidate chosen
  std::optional<Key> key{};               // keyed: the blocks' chunk hashes are stored under it
  std::optional<std::uint64_t> expiry{};  // shard_key_expiry, unix seconds
  std::vector<ShardXorb> xorbs{};         // in reply order
};

struct HostStatus {
  std::string name{};
  std::optional<std::uint64_t> last_contact{};  // unix seconds
  std::uint64_t holds = 0;                      // shards this host holds
  std::string version{};                        // its dedupd release; "": before 0.2.0
};
// A row of dedupd.set_aside.
struct SetAsideMark {
  Hash shard{};
  std::string cas{};   // the CAS that refused; "" a shard of unknown CAS
  std::string host{};  // who saw the refusal ("" a host since forgotten)
  std::string reason{};
  std::uint64_t at = 0;  // unix seconds
};

struct Status {
  std::uint32_t schema_version = 0;
  bool standby = false;  // answered by a hot standby
  std::vector<HostStatus> hosts{};
  std::uint64_t shards = 0, xorbs = 0, files = 0;
  std::uint64_t entries = 0;  // chunk entries
  std::uint64_t live_keys = 0;
  std::uint64_t set_aside = 0;  // set-aside marks: (shard, CAS) pairs
};

// What the last Reader::lookup_chunks sent: every form of every query
// (raw + one per live key), how many were asked (the rest a key filter
// ruled out), and in how many statements.
struct LookupCounters {
  std::uint64_t forms = 0;
  std::uint64_t forms_asked = 0;
  std::uint32_t rounds = 0;
  std::uint32_t filtered_keys = 0;  // live keys whose filter was used
  bool raw_filtered = false;        // the raw forms' filter was used
  bool probed_entries = false;      // the probe read the hits' entries too (schema 6)
  // What the hits needed beyond the probe, not found in the xorb cache, and
  // read in one more statement (0 or 1 of them, `fills`): xorbs (hash, key),
  // holder lists, whole CAS blocks, single chunk entries sliced out. A probe
  // that read the hits' entries (schema 6) counts those it answered from
  // as sliced too.
  std::uint32_t fills = 0;
  std::uint32_t xorbs_read = 0, holders_read = 0, blocks_read = 0;
  std::uint64_t entries_sliced = 0;
};

namespace detail {
class Connection;
class Rows;
// A live key as the server last listed it, with its generation
// (fleet/key_filters.hpp). The raw forms are listed as the key of zeros
// (id 0), which no keyed shard has: zero is the unkeyed shard's key.
struct LiveKey {
  std::int32_t id = 0;
  shard::Key key{};
  std::string generation;
  bool raw() const { return id == 0; }
};
}  // namespace detail
namespace wire {
class Params;
}  // namespace wire

// Writes go to the primary: target_session_attrs=read-write is added to the
// url, so with several hosts listed libpq finds whichever is primary now.
// A lost connection is made again on the next call. Not thread-safe: one
// thread (the publisher) owns a Writer.
class Writer {
 public:
  // Connects, creates or upgrades the schema when the role may (a role that
  // may not gets fleet.schema when the schema is missing or older), refuses
  // a newer schema, and registers host_name.
  static Result<std::unique_ptr<Writer>> connect(const ConnectOptions& options);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  Result<MigrateOutcome> migrate();  // create or upgrade; a newer schema is refused naming both versions
  Result<std::uint32_t> schema_version();
  // The whole shard in ONE transaction, idempotent by shard hash: the same
  // shard from two hosts is one fleet shard with two holders. Stores entries
  // as the shard stores them (keyed forms and the key). `cas`: the CASes
  // that accepted the shard (shard/cas_scope.hpp's form; "" unknown),
  // added to those the fleet shard has (a union: each host's CASes).
  Result<PublishOutcome> publish(const shard::ShardView& view, const Hash& shard_hash, std::string_view cas = {});
  // This host lets go of the shard; the last holder's drop takes its entries
  // out. False when this host did not hold it.
  Result<bool> drop_hold(const Hash& shard_hash);
  // Shards whose shard_key_expiry is <= now (unix seconds) leave; any host
  // may call it. Returns how many left.
  Result<std::uint64_t> expire(std::uint64_t now);
  // Drops every hold of that host (shards it alone held leave) and the host.
  // False when no such host.
  Result<bool> forget_host(std::string_view host_name);
  Result<Ok> heartbeat();  // records this host's last contact
  // The shards this host holds, in hash order (bytewise), after `after`
  // (from the first when nullopt), at most `max`: anti-entropy's view of
  // what the fleet lists for this host. `cas`, when given, gets each one's
  // CAS set ("" unknown), in the same order.
  Result<std::vector<Hash>> held_shards(const std::optional<Hash>& after, std::size_t max,
                                        std::vector<std::string>* cas = nullptr);
  // Set-aside marks (schema 7): this host saw `cas` refuse an upload that
  // relied on `shard`; every host leaves it out of answers for that CAS.
  // The first mark of a (shard, CAS) stays: false when there was one.
  Result<bool> mark_set_aside(const Hash& shard, std::string_view cas, std::string_view reason);
  // The same for every fleet shard that holds one of `xorbs` and belongs to
  // `cas` (or to no known CAS, when `unknown_too`: those answered that CAS's
  // clients too): the shards a refused upload may have relied on when this
  // host answered from the fleet, not from copies of its own. Returns the
  // shards marked now.
  Result<std::vector<Hash>> mark_holders_set_aside(std::span<const Hash> xorbs, std::string_view cas, bool unknown_too,
                                                   std::string_view reason);
  // Deletes the shard's marks: every one (an admin's restore), or those of
  // one CAS (that CAS accepted the shard's very bytes again, so it holds
  // every xorb they name). Returns how many were deleted.
  Result<std::uint64_t> unmark_set_aside(const Hash& shard, std::optional<std::string_view> cas = std::nullopt);
  Result<std::vector<SetAsideMark>> set_aside_marks();
  // "host:port" of the primary the last call reached ("" before any): after
  // a failover, the server libpq found in the url's list in place of the old.
  std::string server() const;

 private:
  explicit Writer(ConnectOptions options);
  Result<Ok> ensure_connected();
  ConnectOptions options_;
  std::unique_ptr<detail::Connection> conn_;
  std::int32_t host_id_ = 0;
};

// Reads may go to a hot standby (target_session_attrs=prefer-standby). Every
// call is bounded by its deadline: past it the connection is dropped (never
// left half-read) and the call returns fleet.timeout; the next call connects
// again, within its own deadline. Not thread-safe: one Reader per thread.
class Reader {
 public:
  static Result<std::unique_ptr<Reader>> connect(const ConnectOptions& options);
  // Connects lazily: the first call pays for the connection, within its deadline.
  static std::unique_ptr<Reader> lazy(const ConnectOptions& options);
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  // Every fleet location of each raw chunk hash (and of its forms under each
  // live fleet key) in one round trip for the whole block. `out` is
  // rewritten; out.size() == raw_hashes.size() on success. Holder lists
  // come from the Reader's cache while younger than holders_max_age;
  // `fresh_holders` reads every one of them with this lookup.
  Result<Ok> lookup_chunks(std::span<const Hash> raw_hashes, ChunkAnswers& out, Deadline deadline,
                           bool fresh_holders = false);
  Result<std::optional<XorbAnswer>> xorb(const Hash& xorb_hash, Deadline deadline);
  Result<std::optional<FileAnswer>> file(const Hash& file_hash, Deadline deadline);
  Result<std::vector<Hash>> files_with_sha256(const Hash& sha256, Deadline deadline);
  Result<Status> status(Deadline deadline);
  // One round trip that asks the server for no work ("SELECT 1"): proof
  // that it answers, for a pool judging whether a lookup that outlasts its
  // bound is slow or facing a server that is down.
  Result<Ok> ping(Deadline deadline);
  const LookupCounters& last_lookup() const { return counters_; }
  // The xorb cache (fleet/xorb_cache.hpp): entries and bytes held, entries
  // dropped for room since the Reader was made.
  std::size_t cached_xorbs() const;
  std::int64_t cached_xorb_bytes() const;
  std::uint64_t cache_evictions() const;
  // Connects and brings the key filters up to date using the whole
  // deadline (a lookup spends only its spare time on them): for a reader
  // about to serve lookups under a tight bound. fleet.timeout when they
  // are not complete by then (lookups still answer, asking every form).
  // With `with_raw`, the raw filter too, which only warm_up builds (the
  // daemon's keeper thread).
  Result<Ok> warm_up(Deadline deadline, bool with_raw = true);
  // The xorbs of the best candidate shard in the order and bounds a local
  // global-dedup reply takes them (fleet/reader_shards.cpp), in one
  // statement. Best: a raw shard (re-keyable by the caller), then the one
  // whose key expires last (never first), then by hash. A candidate expired
  // by `now` (unix seconds) or not listing its xorb is passed over. Its
  // xorb goes first, then those after it in the shard, then those before,
  // until the next would pass a bound (the first always goes in); the
  // shard's key and expiry come with them. nullopt when no candidate is
  // left; no statement when there is none.
  Result<std::optional<ShardXorbs>> shard_xorbs(std::span<const ShardCandidate> candidates,
                                                const ShardXorbBounds& bounds, std::uint64_t now, Deadline deadline);

 private:
  explicit Reader(ConnectOptions options);
  Result<Ok> ensure_connected(Deadline deadline);
  Result<Ok> refresh_keys(Deadline deadline);
  // Brings key filters up to date with steps that start before `stop`,
  // each bounded by the deadline; never fails the call it is part of.
  void refresh_filters(std::chrono::steady_clock::time_point stop, Deadline deadline, bool with_raw);
  // Whether this call keeps a filter for that live key (or the raw forms'
  // row, only `with_raw`).
  bool filtered(const detail::LiveKey& k, bool with_raw) const;
  void drop_connection();
  // One statement within the deadline; a failure other than the server
  // refusing it (fleet.query) drops the connection, never left half-read.
  Result<detail::Rows> query(const char* sql, const wire::Params& params, Deadline deadline);
  ConnectOptions options_;
  std::unique_ptr<detail::Connection> conn_;
  std::chrono::steady_clock::time_point retry_at_{};
  std::vector<Key> keys_{};    // live fleet keys, as last seen
  std::string keys_digest_{};  // the server's list the cache was built from
  std::shared_ptr<KeyFilters> filters_;
  std::vector<detail::LiveKey> live_{};  // the live keys and their generations, as the last answer listed them
  std::shared_ptr<XorbCache> xorbs_;
  bool own_xorbs_ = false;  // not shared: started again on each new connection
  std::string epoch_{};     // the tables the cache is filled from ("": none yet)
  std::uint32_t era_ = 0;   // their era in xorbs_
  // The next probe also reads what each hit answers from its CAS entry,
  // from its heap row (schema 6; about 1.1 us a hit at 10 M entries),
  // instead of index-only: chosen when most hits of the last lookup had no
  // block and wanted a slice (an index descent each, about 6.7 us).
  bool probe_entries_ = false;
  LookupCounters counters_{};
};

}  // namespace dedupd::fleet
