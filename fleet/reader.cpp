// Reader: lookups bounded by a deadline, on a standby when there is one.
// Here the connection and what it keeps (the prepared statements, the live
// keys, their filters), the single lookups (a xorb, a file, a sha256) and
// the status; a batch of chunk hashes is reader_chunks.cpp's.
#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "fleet/answer_text.hpp"
#include "fleet/connection.hpp"
#include "fleet/fleet.hpp"
#include "fleet/host_name.hpp"
#include "fleet/key_filters.hpp"
#include "fleet/partitions.hpp"
#include "fleet/reader_sql.hpp"
#include "fleet/schema_version.hpp"
#include "fleet/sql.hpp"
#include "fleet/xorb_cache.hpp"

namespace dedupd::fleet {
namespace {

using namespace reader_sql;
using detail::Connection;
using wire::Params;
using Clock = std::chrono::steady_clock;

}  // namespace

Reader::Reader(ConnectOptions options)
    : options_(std::move(options)),
      filters_(options_.key_filters_shared ? options_.key_filters_shared : make_key_filters()),
      xorbs_(options_.xorb_cache ? options_.xorb_cache : std::make_shared<XorbCache>(kDefaultXorbCacheBytes)),
      own_xorbs_(!options_.xorb_cache) {}
Reader::~Reader() = default;

std::size_t Reader::cached_xorbs() const { return xorbs_->size(); }
std::int64_t Reader::cached_xorb_bytes() const { return xorbs_->bytes(); }
std::uint64_t Reader::cache_evictions() const { return xorbs_->evictions(); }

std::unique_ptr<Reader> Reader::lazy(const ConnectOptions& options) {
  return std::unique_ptr<Reader>(new Reader(options));
}

Result<std::unique_ptr<Reader>> Reader::connect(const ConnectOptions& options) {
  std::unique_ptr<Reader> r(new Reader(options));
  if (auto c = r->ensure_connected(Deadline::in(options.connect_timeout)); !c) return c.error();
  return r;
}

void Reader::drop_connection() {
  conn_.reset();
  retry_at_ = Clock::now() + options_.retry_after;
}

Result<detail::Rows> Reader::query(const char* sql, const wire::Params& params, Deadline deadline) {
  auto rows = conn_->exec_until(sql, params, deadline);
  if (!rows && rows.error().rule != std::string(kRuleQuery)) drop_connection();
  return rows;
}

Result<Ok> Reader::ensure_connected(Deadline deadline) {
  if (conn_ && !conn_->broken()) return Ok{};
  conn_.reset();
  if (Clock::now() < retry_at_)
    return make_error(kRuleUnavailable, "the fleet database failed recently; not asking again yet");
  auto c = Connection::open_until(options_.url, detail::Role::prefer_standby, deadline.at);
  if (!c) {
    drop_connection();
    return c.error();
  }
  conn_ = std::move(*c);
  // So is the xorb cache, when it is this Reader's own: a promoted standby,
  // or a database restored from an older dump, may hand out the same row
  // ids again. A shared one is its owner's to clear.
  if (own_xorbs_) xorbs_->clear();
  epoch_.clear();
  era_ = 0;
  auto v = conn_->exec_until(schema::kVersionQuery, {}, deadline.at);
  if (!v) {
    drop_connection();
    return make_error(kRuleSchema, "no fleet schema: " + v.error().message);
  }
  auto found = schema::version_of(*v);
  if (!found) {
    drop_connection();
    return found.error();
  }
  if (auto e = schema::unusable(*found)) {
    drop_connection();
    return *e;
  }
  // The lookup is planned once per connection, for any arrays: planning it
  // with each block's constants (16 arrays of thousands) cost more than
  // running it.
  auto set = conn_->exec_until("SET plan_cache_mode = force_generic_plan", {}, deadline.at);
  if (!set) {
    drop_connection();
    return set.error();
  }
  auto prepared =
      conn_->prepare_until(kLookupStatement, lookup_sql(false).c_str(), schema::kChunkPartitions, deadline.at);
  if (!prepared) {
    drop_connection();
    return prepared.error();
  }
  prepared =
      conn_->prepare_until(kLookupEntriesStatement, lookup_sql(true).c_str(), schema::kChunkPartitions, deadline.at);
  if (!prepared) {
    drop_connection();
    return prepared.error();
  }
  prepared = conn_->prepare_until(kFillStatement, fill_sql().c_str(), 6, deadline.at);
  if (!prepared) {
    drop_connection();
    return prepared.error();
  }
  return refresh_keys(deadline);
}

Result<Ok> Reader::refresh_keys(Deadline deadline) {
  auto r = query(key_rows_sql().c_str(), {}, deadline);
  if (!r) return r.error();
  auto list = read_key_rows(*r, live_);
  if (!list) return list.error();
  auto keys = parse_key_list(list->digest);
  if (!keys) return keys.error();
  keys_ = std::move(*keys);
  keys_digest_ = std::string(list->digest);
  note_epoch(*xorbs_, epoch_, era_, list->epoch);
  return Ok{};
}

bool Reader::filtered(const detail::LiveKey& k, bool with_raw) const {
  return k.raw() ? with_raw && options_.raw_filter : options_.key_filters;
}

void Reader::refresh_filters(Clock::time_point stop, Deadline deadline, bool with_raw) {
  filters_->keep_only_live(live_);
  // The keys first (live_ lists the raw forms last): their filters are the
  // smaller, and each spares a probe per miss.
  for (const auto& k : live_) {
    if (!filtered(k, with_raw)) continue;
    while (!filters_->usable(k.key, k.generation, epoch_)) {
      const double left = std::chrono::duration<double>(stop - Clock::now()).count();
      if (!conn_ || left < std::max(0.002, 2 * filters_->last_step_seconds())) return;
      auto done = filters_->step(*conn_, k, epoch_, left / 2, deadline.at);
      if (!done) {
        // The lookup is answered; a filter that could not be brought up to
        // date stays unused. A timed-out step leaves the connection
        // mid-statement: drop it (the next call connects again).
        if (done.error().rule != std::string(kRuleQuery)) conn_.reset();
        return;
      }
      // Complete for the generation it listed (maybe newer than k's), over
      // the budget, the key gone, or another Reader at it.
      if (*done != KeyFilters::Step::more) break;
    }
  }
}

Result<Ok> Reader::warm_up(Deadline deadline, bool with_raw) {
  const bool was_connected = conn_ && !conn_->broken();
  if (auto c = ensure_connected(deadline); !c) return c.error();
  if (was_connected)
    if (auto k = refresh_keys(deadline); !k) return k.error();
  refresh_filters(deadline.at, deadline, with_raw);
  // A key over the filters' budget is as done as it will get: asked in
  // every form, not late.
  bool complete = conn_ != nullptr;
  for (const auto& k : live_)
    complete = complete && (!filtered(k, with_raw) || filters_->usable(k.key, k.generation, epoch_) ||
                            filters_->over_budget(k.key, k.generation, epoch_));
  if (!complete) return make_error(kRuleTimeout, "the key filters could not be brought up to date in time");
  return Ok{};
}

Result<std::optional<XorbAnswer>> Reader::xorb(const Hash& xorb_hash, Deadline deadline) {
  if (auto c = ensure_connected(deadline); !c) return c.error();
  auto rows = query(("SELECT k.key, x.cas_block, " + sql::shards_of("x.id", "xorb_ids") +
                     " FROM dedupd.xorb x LEFT JOIN dedupd.chunk_key k ON k.id = x.key_id "
                     "WHERE x.hash = $1 ORDER BY x.key_id")
                        .c_str(),
                    Params().bytea(xorb_hash.bytes), deadline);
  if (!rows) return rows.error();
  if (rows->size() == 0) return std::optional<XorbAnswer>();
  XorbAnswer answer{xorb_hash, {}};
  for (int r = 0; r < rows->size(); ++r) {
    XorbForm form;
    form.keyed = !rows->null(r, 0);
    if (form.keyed) form.key = rows->hash(r, 0);
    auto block = rows->bytes(r, 1);
    // Published from a validated shard; checked again so a reader of the
    // answer (shard::XorbBlock) never runs off its end.
    if (block.size() < shard::kEntrySize || block.size() != shard::XorbBlock(block.data(), 0).byte_size())
      return make_error(kRuleProtocol, "stored CAS block of xorb " + xorb_hash.to_string() + " has the wrong size");
    form.cas_block.assign(block.begin(), block.end());
    if (!rows->null(r, 2)) {
      auto refs = parse_shard_list(rows->text(r, 2));
      if (!refs) return refs.error();
      form.shards = std::move(*refs);
    }
    answer.forms.push_back(std::move(form));
  }
  return std::optional<XorbAnswer>(std::move(answer));
}

Result<std::optional<FileAnswer>> Reader::file(const Hash& file_hash, Deadline deadline) {
  if (auto c = ensure_connected(deadline); !c) return c.error();
  auto rows = query(
      ("SELECT f.block, f.sha256, " + sql::shards_of("f.id", "file_ids") + " FROM dedupd.file f WHERE f.hash = $1")
          .c_str(),
      Params().bytea(file_hash.bytes), deadline);
  if (!rows) return rows.error();
  if (rows->size() == 0) return std::optional<FileAnswer>();
  FileAnswer answer;
  answer.hash = file_hash;
  auto block = rows->bytes(0, 0);
  if (block.size() < shard::kEntrySize || block.size() != shard::FileBlock(block.data(), 0).byte_size())
    return make_error(kRuleProtocol, "stored block of file " + file_hash.to_string() + " has the wrong size");
  answer.block.assign(block.begin(), block.end());
  if (!rows->null(0, 1)) answer.sha256 = rows->hash(0, 1);
  if (!rows->null(0, 2)) {
    auto refs = parse_shard_list(rows->text(0, 2));
    if (!refs) return refs.error();
    answer.shards = std::move(*refs);
  }
  return std::optional<FileAnswer>(std::move(answer));
}

Result<std::vector<Hash>> Reader::files_with_sha256(const Hash& sha256, Deadline deadline) {
  if (auto c = ensure_connected(deadline); !c) return c.error();
  auto rows =
      query("SELECT hash FROM dedupd.file WHERE sha256 = $1 ORDER BY hash", Params().bytea(sha256.bytes), deadline);
  if (!rows) return rows.error();
  std::vector<Hash> out;
  for (int r = 0; r < rows->size(); ++r) out.push_back(rows->hash(r, 0));
  return out;
}

Result<Ok> Reader::ping(Deadline deadline) {
  if (auto c = ensure_connected(deadline); !c) return c.error();
  if (auto r = query("SELECT 1", {}, deadline); !r) return r.error();
  return Ok{};
}

Result<Status> Reader::status(Deadline deadline) {
  if (auto c = ensure_connected(deadline); !c) return c.error();
  auto totals = query(
      "SELECT (SELECT coalesce(applied, version) FROM dedupd.schema_version), pg_is_in_recovery(), "
      "(SELECT count(*) FROM dedupd.shard), (SELECT count(*) FROM dedupd.xorb), (SELECT count(*) FROM dedupd.file), "
      "(SELECT coalesce(sum(chunks), 0)::int8 FROM dedupd.xorb), "
      "(SELECT count(*) FROM dedupd.chunk_key WHERE shards > 0)",
      {}, deadline);
  if (!totals) return totals.error();
  Status s;
  s.schema_version = std::uint32_t(totals->int4(0, 0));
  s.standby = totals->boolean(0, 1);
  s.shards = std::uint64_t(totals->int8(0, 2));
  s.xorbs = std::uint64_t(totals->int8(0, 3));
  s.files = std::uint64_t(totals->int8(0, 4));
  s.entries = std::uint64_t(totals->int8(0, 5));
  s.live_keys = std::uint64_t(totals->int8(0, 6));
  auto marks = query("SELECT count(*) FROM dedupd.set_aside", {}, deadline);
  if (!marks) return marks.error();
  s.set_aside = std::uint64_t(marks->int8(0, 0));
  auto hosts = query(
      "SELECT h.name, extract(epoch FROM h.last_contact)::int8, "
      "(SELECT count(*) FROM dedupd.hold d WHERE d.host_id = h.id), h.version FROM dedupd.host h ORDER BY h.name",
      {}, deadline);
  if (!hosts) return hosts.error();
  for (int r = 0; r < hosts->size(); ++r) {
    HostStatus h;
    h.name = std::string(hosts->text(r, 0));
    if (!hosts->null(r, 1)) h.last_contact = std::uint64_t(hosts->int8(r, 1));
    h.holds = std::uint64_t(hosts->int8(r, 2));
    if (!hosts->null(r, 3)) h.version = std::string(hosts->text(r, 3));
    s.hosts.push_back(std::move(h));
  }
  return s;
}

}  // namespace dedupd::fleet
