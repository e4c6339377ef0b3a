// Values the index takes and returns. Hashes are shard::Hash (print them with
// to_string(), the Xet form); times are unix seconds; expiry nullopt = never.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "shard/chunk_answers.hpp"
#include "shard/format.hpp"
#include "shard/hash.hpp"
#include "shard/keys.hpp"

namespace dedupd::index {

using shard::Hash;
using shard::Key;

enum class ShardState : std::uint8_t { live = 1, expired = 2, removed = 3 };
const char* to_string(ShardState s);

// Where a shard file came from. An empty path (an uploaded body) records no
// source. size and mtime let the daemon skip a file it has already seen.
struct SourceInfo {
  std::string path{};
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
};

struct IngestOptions {
  // Unix seconds: recorded as ingested_at, and a shard already expired at
  // `now` is recorded as expired without indexing its entries. 0: unknown.
  std::uint64_t now = 0;
  // Index again a shard that was removed or expired before. Without it such
  // a shard stays out (a rescan must not bring back what expiry purged).
  bool revive = false;
  // The shard's identity when the caller already knows it (e.g. verified
  // against its <hash>.mdb name). Otherwise the index hashes the bytes.
  std::optional<Hash> shard_hash{};
  // The CAS that accepted the shard (a normalized URL,
  // shard/cas_scope.hpp); empty: unknown. A shard already present adds it
  // to its CASes.
  std::string cas{};
};

enum class IngestOutcome : std::uint8_t {
  added,            // new shard, its entries are now queryable
  already_present,  // same content already live (the path was recorded)
  previously_gone,  // removed or expired earlier; not indexed again
  expired,          // expired at options.now; recorded, not indexed
};
const char* to_string(IngestOutcome o);

struct IngestResult {
  Hash shard{};
  IngestOutcome outcome = IngestOutcome::added;
  // The shard's own content.
  std::uint64_t xorbs = 0, chunks = 0, files = 0;
  // What this ingest added to the index (shared xorbs/files add nothing).
  std::uint64_t new_xorbs = 0, new_chunk_entries = 0, new_files = 0;
};

struct ShardRef {
  Hash shard{};
  std::optional<std::uint64_t> expiry{};
  bool keyed = false;
  Key key{};               // zero when not keyed
  std::string cas{};       // the CAS it belongs to; empty: unknown
  bool set_aside = false;  // global-dedup answers leave it out
};

// One place a chunk lives, with the shards that describe it.
struct Location : shard::ChunkPlace {
  std::vector<ShardRef> shards{};
};

// Results of a batch lookup (shard/chunk_answers.hpp has the layout).
struct BatchLocation : shard::ChunkPlace {
  std::uint32_t shard_set = 0;
};
struct BatchResult : shard::FlatAnswers<BatchLocation, ShardRef> {};

// One stored form of a xorb. The same xorb hash can have several: stored
// raw, stored keyed with key K (chunk hashes differ), or (rarely) two shards
// describing it differently. cas_block is the CAS section block exactly as
// the source shard stored it (header + 48-byte chunk entries), ready to be
// copied into a reply shard; its chunk hashes are keyed when `keyed`.
struct XorbInfo {
  Hash hash{};
  bool keyed = false;
  Key key{};
  shard::XorbHeader header{};
  std::vector<shard::ChunkEntry> chunks{};
  std::vector<std::uint8_t> cas_block{};
  std::vector<ShardRef> shards{};
};

struct FileInfo {
  Hash hash{};
  std::uint64_t size = 0;  // sum of the terms' unpacked bytes
  std::vector<shard::FileTerm> terms{};
  std::vector<Hash> verification{};  // range hashes, one per term, or empty
  std::optional<Hash> sha256{};
  std::vector<Hash> shards{};
};

struct ShardInfo {
  Hash hash{};
  ShardState state = ShardState::live;
  std::vector<std::string> paths{};
  std::uint64_t size = 0;
  bool has_footer = false;
  std::optional<std::uint64_t> created{};  // nullopt without footer
  std::optional<std::uint64_t> expiry{};
  bool keyed = false;
  Key key{};
  std::uint64_t xorbs = 0, chunks = 0, files = 0;
  std::uint64_t ingested_at = 0;  // 0: unknown
  std::uint64_t ended_at = 0;     // when removed/expired; 0: live or unknown
  std::string cas{};              // the CAS it belongs to; empty: unknown
  bool set_aside = false;         // left out of global-dedup answers, since
  std::uint64_t set_aside_at = 0;
  std::string set_aside_reason{};  // and why
};

struct RejectInfo {
  std::string path{};
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::optional<Hash> content_hash{};
  std::string rule{};
  std::uint64_t offset = 0;
  std::string message{};
  std::uint64_t recorded_at = 0;
};

// What the index knows about a path (see Index::source).
struct SourceRecord {
  std::string path{};
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  bool rejected = false;
  Hash shard{};  // accepted: the shard it held
};

struct ChunkFilterInfo {
  bool in_service = false;      // a reader starting now would trust it
  std::uint64_t bytes = 0;      // memory the filters hold (both tables' and the recent table's)
  std::uint64_t max_bytes = 0;  // their bound, Options::filter_memory
  std::uint64_t capacity = 0;   // entries the filter of both tables was sized for
  std::uint64_t added = 0;      // entries put in so far (removed ones stay)
  bool at_bound = false;        // sized down to max_bytes: not rebuilt as the index grows
  // The expected share of absent stored forms it lets through to a search
  // (chunk_filter.hpp, false_positive_rate()).
  double false_positive_rate = 0;
};

// What Index::counts() reads: the counters and each table's entries, a
// handful of pages whatever the index's size.
struct Counts {
  std::uint64_t shards_live = 0, shards_expired = 0, shards_removed = 0, rejected = 0;
  std::uint64_t xorbs = 0;                 // stored xorb forms
  std::uint64_t chunk_entries = 0;         // (xorb form, chunk index) pairs
  std::uint64_t recent_chunk_entries = 0;  // of which not merged yet
  std::uint64_t files = 0;
};

struct Stats : Counts {
  std::uint64_t keys = 0;      // live keys
  std::uint64_t db_bytes = 0;  // size of data.mdb
  std::uint64_t map_size = 0;
  std::uint64_t map_used = 0;    // pages up to the high-water mark x page size
  std::uint64_t free_bytes = 0;  // pages below it that are free for reuse
  std::uint64_t page_size = 0;
  std::optional<std::uint64_t> next_expiry{};
  ChunkFilterInfo chunk_filter{};  // the in-memory filters (not on disk)
};

enum class RemoveOutcome : std::uint8_t { removed, not_found, not_live };

struct RemoveResult {
  RemoveOutcome outcome = RemoveOutcome::not_found;
  std::optional<ShardInfo> shard{};  // the record after the call, when known
};

}  // namespace dedupd::index
