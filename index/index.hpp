// dedupd's persistent index: chunk hash -> xorb locations over every live
// shard, in one LMDB environment (see tables.hpp for the tables).
//
// Threads: every const method is a reader and may run on any number of
// threads at once, never waiting for a writer (MVCC). Non-const methods
// write; they serialise among themselves. Each call is one transaction, so
// what a reader sees is always a set of whole shards.
// Durability: a write that returned success is on disk (fsync'd), unless
// Options::no_sync_for_benchmarks was set.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "index/observer.hpp"
#include "index/options.hpp"
#include "index/outbox.hpp"
#include "index/status.hpp"
#include "index/types.hpp"
#include "shard/reader.hpp"
#include "shard/writer.hpp"

namespace dedupd::index {

// What an open index holds (index/impl.hpp), only for the index's own .cpp
// files.
struct OpenIndex;

class Index {
 public:
  // Opens (or creates) the index in options.dir. Fails with rule
  // "index.schema" on another schema version, "index.already_open" when this
  // process already has it open.
  static Result<std::unique_ptr<Index>> open(const Options& options);
  // The layout the file has: schema::kVersion, unless opened read-only (1:
  // upgraded by the next writable open).
  std::uint32_t schema_version() const;
  ~Index();
  Index(const Index&) = delete;
  Index& operator=(const Index&) = delete;

  // ---- writes ---------------------------------------------------------------
  // Indexes one shard in one transaction: all of it or nothing. The same
  // content twice is one shard (the second source is recorded). A source
  // path previously recorded as rejected becomes accepted.
  Result<IngestResult> ingest(const shard::ShardView& view, const SourceInfo& source,
                              const IngestOptions& options = {});

  struct BatchItem {
    const shard::ShardView* shard;
    SourceInfo source{};
    IngestOptions options{};
  };
  // Several shards in one transaction (one fsync): for bulk loads.
  Result<std::vector<IngestResult>> ingest_batch(std::span<const BatchItem> items);

  // Takes a live shard's entries out (shared entries stay while another live
  // shard holds them) and marks it removed; the record stays listed. Costs
  // in proportion to the shard's own entries; the file is not needed.
  Result<RemoveResult> remove(const Hash& shard, std::uint64_t now = 0);
  // Removes every live shard whose expiry <= now, marking them expired and
  // keeping their chunk forms for expired_holders() (30 days from now; older
  // ones are dropped here). Returns their hashes, earliest first.
  Result<std::vector<Hash>> expire(std::uint64_t now);

  // Builds the in-memory chunk filter from the chunk tables and puts it in
  // service (index/chunk_filter.hpp): lookups then skip searching for stored
  // forms that are certainly absent. It reads (about a second per 4 M
  // entries) without holding up writers or readers, adds what this process
  // committed meanwhile, and keeps itself up to date with this process's
  // writes from then on. Without it, or after a write by another process,
  // lookups search every form: slower, same answers. `go_on` runs before
  // each snapshot's read, with its number, no lock held; false gives the
  // build up (shutdown).
  Result<ChunkFilterInfo> build_chunk_filter(const std::function<bool(unsigned)>& go_on = {});
  // True when no filter is in service (none built, or it gave up after
  // another process wrote), or it is over a capacity a rebuild could raise:
  // time for build_chunk_filter().
  bool chunk_filter_due() const;
  ChunkFilterInfo chunk_filter_info() const;

  // Merges the recently added chunk entries into the main table now (ingest
  // does this by itself when they are due; for idle time and tests).
  Status merge_recent();

  // Leaves a shard out of global-dedup answers (its CAS refused an upload
  // that relied on it), with why; the first reason stays. Its entries stay
  // for every other question. nullopt: no such shard.
  Result<std::optional<ShardInfo>> set_aside(const Hash& shard, const std::string& reason, std::uint64_t now);
  // Gives each shard of unknown CAS the one `scope_of_path` names for its
  // paths, as the upgrade to schema 7 does (the rule may know more now).
  Status scope_unknown_shards(const std::function<std::string(const std::string& path)>& scope_of_path);
  // Brings a set-aside shard back into global-dedup answers.
  Result<std::optional<ShardInfo>> restore(const Hash& shard);

  // Remembers an invalid file so the daemon does not retry it until its size
  // or mtime changes. `reject.recorded_at` is taken as given.
  Status record_rejected(const RejectInfo& reject);
  // Forgets a source path (its file is gone). Shards stay as they are.
  Status forget_source(const std::string& path);

  // ---- the fleet outbox (outbox.hpp) ----------------------------------------
  // Turns queuing on or off. On: every live shard is queued for publishing
  // (the fleet has not heard of any yet). Off: the queue is emptied.
  Status set_outbox(bool on, std::uint64_t now);
  // The oldest `max` entries, in order.
  Result<std::vector<OutboxEntry>> outbox_next(std::size_t max) const;
  // Removes every entry up to and including `through_seq`.
  Status outbox_ack(std::uint64_t through_seq);
  Result<OutboxStats> outbox_stats() const;
  // Takes `entry` out of the queue and keeps it, with `reason`, among the
  // parked entries, in one transaction. An entry no longer queued is parked
  // all the same (the caller saw it).
  Status outbox_park(const OutboxEntry& entry, const std::string& reason, std::uint64_t now);
  // Parked entries, oldest first (at most `max`).
  Result<std::vector<ParkedEntry>> outbox_parked(std::size_t max) const;
  // Queues every parked entry again (at the end of the queue); returns how
  // many. The outbox being off, there is nothing parked.
  Result<std::uint64_t> outbox_retry_parked(std::uint64_t now);
  // Anti-entropy, one bounded round: `fleet_held` are the shards the fleet
  // lists for this host after `after`, in hash order, and `fleet_more` says
  // the list stopped short. Compares them with the live shards after
  // `after` (at most `max` shard records read) over the hashes both sides
  // cover, and queues what differs, except shards with an entry already
  // queued or parked: the live ones the fleet lacks for publishing, the
  // others for a hold drop. Nothing is queued while the outbox is off.
  // `fleet_cas`, when given, is the CAS set the fleet has for each of
  // `fleet_held` (shard/cas_scope.hpp's form; "" unknown): a shard it holds
  // without every CAS that accepted it here is published again, which adds
  // them (ReconcileRound::cas).
  Result<ReconcileRound> outbox_reconcile(const std::optional<Hash>& after, std::span<const Hash> fleet_held,
                                          bool fleet_more, std::size_t max, std::uint64_t now,
                                          std::span<const std::string> fleet_cas = {});
  // A live shard's content rebuilt from the index (its xorbs, files, key and
  // expiry; the bytes differ from the file's, the entries do not), so a shard
  // can be published after its file is gone. nullopt: not live.
  Result<std::optional<std::vector<std::uint8_t>>> rebuild_shard(const Hash& shard_hash) const;

  // ---- reads ----------------------------------------------------------------
  // Every live location of a RAW chunk hash (keyed shards are searched with
  // the query hashed under each live key). Empty when unknown.
  Result<std::vector<Location>> lookup(const Hash& raw_chunk_hash) const;
  // Many hashes in one snapshot; `out` is reused (cleared first).
  Status lookup_batch(std::span<const Hash> raw_chunk_hashes, BatchResult& out) const;

  // The expired shards that held a RAW chunk hash, as far as the forms kept
  // for a while after expiry tell (64-bit prefixes: a hint, not a proof).
  // For saying why a lookup found nothing; costs a keyed hash per expired
  // shard kept, so it is meant for single queries, not streams.
  Result<std::vector<ShardInfo>> expired_holders(const Hash& raw_chunk_hash) const;

  // Every stored form of a xorb (raw, keyed with K, ...); empty when unknown.
  Result<std::vector<XorbInfo>> xorb(const Hash& xorb_hash) const;
  // The xorbs a live shard brought (index/shard_xorbs.cpp), in one
  // snapshot: `choose` sees them in the shard's order and returns the
  // positions wanted, in the order wanted; those come back as the shard
  // stored them. nullopt when the shard is not live.
  struct XorbHead {
    Hash hash{};
    std::uint32_t chunks = 0;
  };
  using XorbChooser = std::function<std::vector<std::size_t>(std::span<const XorbHead>)>;
  Result<std::optional<std::vector<shard::XorbRecord>>> shard_xorbs(const Hash& shard_hash,
                                                                    const XorbChooser& choose) const;
  Result<std::optional<FileInfo>> file(const Hash& file_hash) const;
  Result<std::vector<Hash>> files_with_sha256(const Hash& sha256) const;

  Result<std::optional<ShardInfo>> shard(const Hash& shard_hash) const;
  // All shard records (optionally one state), in hash order.
  Result<std::vector<ShardInfo>> shards(std::optional<ShardState> state = std::nullopt) const;
  Result<std::vector<RejectInfo>> rejected() const;
  // What the index knows about a path, if anything.
  Result<std::optional<SourceRecord>> source(const std::string& path) const;
  // True when `path` was rejected with exactly this size and mtime.
  Result<bool> is_known_rejected(const std::string& path, std::uint64_t size, std::int64_t mtime_ns) const;

  // The earliest expiry among live shards (nullopt: none expires).
  Result<std::optional<std::uint64_t>> next_expiry() const;
  // Live shards whose expiry <= now, earliest first (expire()'s dry run).
  Result<std::vector<Hash>> due(std::uint64_t now) const;
  // The keys of live keyed shards.
  Result<std::vector<Key>> live_keys() const;

  // Every field of Stats. It walks the keys and LMDB's freelist, pages that
  // grow with the index's history and are cold after a restart.
  Result<Stats> stats() const;
  // The counters and entry counts alone, from a few pages: for what must
  // stay cheap, such as the status line sent with READY=1.
  Result<Counts> counts() const;

  // Walks every table and returns each broken invariant found (empty: all
  // hold): shard records vs their contributions, refcount duplicates vs live
  // shards, xorb ids, chunk entries vs xorb records, files, keys, expiry,
  // counters. Reads everything: for tests, `dedupd --check` and after a crash.
  Result<std::vector<std::string>> check_invariants() const;

  // The scrub: the checks of single records that check_invariants makes
  // (every shard, xorb and file record decodes; every chunk entry, in both
  // chunk tables, names a xorb that exists, a chunk inside it, and matches
  // its stored hash) and a walk of every other table, a bounded slice at a
  // time, each in its own read snapshot,
  // so a running daemon walks the whole index in the background without
  // holding old pages for long. A slice ends after `max_items` items or
  // once it has taken `max_time`, whichever comes first, but checks one
  // item at least, so a pass always gets on. A pass ends when
  // `position.done`; the next call starts another. A call that finds a
  // write of this process under way gives way to it: it checks nothing,
  // returns no problem and leaves `position` as it was.
  struct ScrubPosition {
    unsigned table = 0;  // in index/scrub.cpp's order
    std::vector<std::uint8_t> key, value;
    bool resume = false;  // key/value: the last item checked
    bool done = false;
    std::uint64_t items = 0;  // checked in this pass so far
  };
  Result<std::vector<std::string>> scrub(
      ScrubPosition& position, std::size_t max_items,
      std::chrono::steady_clock::duration max_time = std::chrono::steady_clock::duration::max()) const;

  const std::string& dir() const;

  // LMDB asserts what its pages must be (a leaf where it expects one) and
  // calls abort() when one is not: damage it meets deep in a read. A
  // program may have it call `handler` first, with LMDB's text; a handler
  // that returns lets the abort happen.
  static void set_lmdb_assert_handler(void (*handler)(const char* what));

 private:
  friend class RawChunkWalker;  // index/export.hpp: the raw-chunk walk for exports
  explicit Index(std::unique_ptr<OpenIndex> impl);
  std::unique_ptr<OpenIndex> impl_{};
};

}  // namespace dedupd::index
