// Writer: publish, holds, expiry and forgetting hosts, each in one
// transaction on the primary. Removal is by xorb and file refcounts, and a
// dead xorb's chunk rows are found by the prefixes in its own CAS block, so
// the chunk table needs no index but its prefix one.
#include <algorithm>
#include <climits>
#include <unordered_map>

#include "fleet/connection.hpp"
#include "fleet/fleet.hpp"
#include "fleet/host_name.hpp"
#include "fleet/schema_version.hpp"

namespace dedupd::fleet {
namespace {

using detail::Connection;
using wire::Params;

// Retry a transaction that lost a race (the same shard published by another
// host meanwhile) or a deadlock/serialization failure.
constexpr const char* kRuleRetry = "fleet.retry";
bool retryable(const std::string& sqlstate) { return sqlstate == "40P01" || sqlstate == "40001"; }

// Also says which release this host runs (schema 7): `dedupctl fleet
// status` shows a fleet mid-upgrade.
const char* const kUpsertHost =
    "INSERT INTO dedupd.host (name, last_contact, version) VALUES ($1, now(), nullif($2, '')) "
    "ON CONFLICT (name) DO UPDATE SET last_contact = now(), version = EXCLUDED.version RETURNING id";

// Runs fn in BEGIN/COMMIT; rolls back on error (if the connection lives).
template <class T, class Fn>
Result<T> in_transaction(Connection& c, Fn&& fn) {
  if (auto b = c.exec("BEGIN"); !b) return b.error();
  Result<T> out = fn();
  if (!out) {
    if (!c.broken()) c.rollback();
    return out;
  }
  if (auto e = c.exec("COMMIT"); !e) return e.error();
  return out;
}

// in_transaction, again after a deadlock or serialization failure (two
// writers touching shared xorbs in different orders): the loser's work is
// rolled back whole, so doing it again is safe.
template <class T, class Fn>
Result<T> retrying(Connection& c, Fn&& fn) {
  for (int attempt = 0;; ++attempt) {
    auto r = in_transaction<T>(c, fn);
    if (r || attempt >= 4 || !retryable(c.last_sqlstate())) return r;
  }
}

// Decrements what the locked shard `shard_id` contributed and deletes what
// no other shard lists: its chunk rows (found by the prefixes in the dead
// xorbs' CAS blocks), xorbs, files; its key stops being live with its last
// shard.
Result<Ok> drop_shard(Connection& c, std::int64_t shard_id) {
  auto gone = c.exec(
      "WITH gone AS (DELETE FROM dedupd.shard WHERE id = $1 RETURNING key_id, xorb_ids, file_ids), "
      "xs AS (UPDATE dedupd.xorb x SET refs = x.refs - 1 FROM gone WHERE x.id = ANY (gone.xorb_ids) "
      "       RETURNING x.id, x.refs, x.cas_block), "
      "fs AS (UPDATE dedupd.file f SET refs = f.refs - 1 FROM gone WHERE f.id = ANY (gone.file_ids) "
      "       RETURNING f.id, f.refs), "
      "ks AS (UPDATE dedupd.chunk_key k SET shards = k.shards - 1 FROM gone WHERE k.id = gone.key_id RETURNING k.id) "
      "SELECT true, id, cas_block FROM xs WHERE refs <= 0 "
      "UNION ALL SELECT false, id, NULL FROM fs WHERE refs <= 0 "
      "UNION ALL SELECT NULL, id, NULL FROM ks",
      Params().int8(shard_id));
  if (!gone) return gone.error();
  std::vector<std::int32_t> dead_xorbs, dead_files;
  std::vector<std::int64_t> chunk_prefixes;
  std::vector<std::int32_t> chunk_xorbs;
  for (int r = 0; r < gone->size(); ++r) {
    if (gone->null(r, 0)) continue;  // the key row
    std::int32_t id = gone->int4(r, 1);
    if (!gone->boolean(r, 0)) {
      dead_files.push_back(id);
      continue;
    }
    dead_xorbs.push_back(id);
    auto block = gone->bytes(r, 2);
    for (std::size_t off = shard::kEntrySize; off + shard::kEntrySize <= block.size(); off += shard::kEntrySize) {
      chunk_prefixes.push_back(wire::prefix_of(block.data() + off));
      chunk_xorbs.push_back(id);
    }
  }
  if (!chunk_prefixes.empty()) {
    auto del = c.exec(
        "DELETE FROM dedupd.chunk c USING unnest($1::int8[], $2::int4[]) AS d (prefix, xorb_id) "
        "WHERE c.prefix = d.prefix AND c.xorb_id = d.xorb_id",
        Params().int8_array(chunk_prefixes).int4_array(chunk_xorbs));
    if (!del) return del.error();
  }
  if (!dead_xorbs.empty()) {
    auto del = c.exec("DELETE FROM dedupd.xorb WHERE id = ANY ($1) AND refs <= 0", Params().int4_array(dead_xorbs));
    if (!del) return del.error();
  }
  if (!dead_files.empty()) {
    auto del = c.exec("DELETE FROM dedupd.file WHERE id = ANY ($1) AND refs <= 0", Params().int4_array(dead_files));
    if (!del) return del.error();
  }
  return Ok{};
}

// Deletes this host's hold on the locked shard and drops the shard when no
// holder is left. False when the host did not hold it.
Result<bool> release(Connection& c, std::int64_t shard_id, std::int32_t host_id) {
  auto del =
      c.exec("DELETE FROM dedupd.hold WHERE shard_id = $1 AND host_id = $2", Params().int8(shard_id).int4(host_id));
  if (!del) return del.error();
  if (del->affected() == 0) return false;
  auto left = c.exec("SELECT count(*) FROM dedupd.hold WHERE shard_id = $1", Params().int8(shard_id));
  if (!left) return left.error();
  if (left->int8(0, 0) == 0) {
    if (auto d = drop_shard(c, shard_id); !d) return d.error();
  }
  return true;
}

// CASes are normalized URLs (printable ASCII, no space), one space between
// two; "" is unknown. Readers show them in JSON as they are.
bool valid_cas_set(std::string_view cas) {
  if (cas.empty()) return true;
  if (cas.front() == ' ' || cas.back() == ' ' || cas.find("  ") != std::string_view::npos) return false;
  return std::all_of(cas.begin(), cas.end(), [](char ch) { return ch >= ' ' && ch <= '~'; });
}

// A shard already in the fleet learns the CASes of this publish it lacked
// (`has_all`: it lacks none): the same bytes accepted by another CAS answer
// that CAS's queries too. True when it learned one. Publishers of the shard
// hold it FOR SHARE; two adding CASes at once may deadlock, and the loser
// is retried whole.
Result<bool> merge_cas(Connection& c, std::int64_t shard_id, bool has_all, std::string_view cas) {
  if (has_all) return false;
  auto up = c.exec(
      "UPDATE dedupd.shard SET cas = ARRAY(SELECT DISTINCT u FROM unnest(coalesce(cas, '{}') || "
      "string_to_array($2, ' ')) AS u ORDER BY u) WHERE id = $1",
      Params().int8(shard_id).text(cas));
  if (!up) return up.error();
  return true;
}

struct XorbRow {
  Hash hash;
  std::span<const std::uint8_t> block;
  std::int32_t chunks;
  shard::XorbBlock view;
};

}  // namespace

const char* to_string(PublishResult r) {
  switch (r) {
    case PublishResult::added:
      return "added";
    case PublishResult::new_holder:
      return "new_holder";
    case PublishResult::already_held:
      return "already_held";
  }
  return "?";
}

Result<MigrateOutcome> migrate(const ConnectOptions& options, bool final) {
  auto c = Connection::open_until(options.url, detail::Role::primary,
                                  std::chrono::steady_clock::now() + options.connect_timeout);
  if (!c) return c.error();
  (*c)->set_statement_timeout(options.statement_timeout);
  return schema::migrate(**c, final);
}

Writer::Writer(ConnectOptions options) : options_(std::move(options)) {}
Writer::~Writer() = default;

Result<std::unique_ptr<Writer>> Writer::connect(const ConnectOptions& options) {
  if (!valid_host_name(options.host_name))
    return make_error(kRuleArgument, "fleet host name '" + options.host_name +
                                         "' is not 1-253 characters of letters, digits, '.', '_' and '-'");
  std::unique_ptr<Writer> w(new Writer(options));
  if (auto c = w->ensure_connected(); !c) return c.error();
  return w;
}

Result<Ok> Writer::ensure_connected() {
  if (conn_ && !conn_->broken()) return Ok{};
  conn_.reset();
  auto c = Connection::open_until(options_.url, detail::Role::primary,
                                  std::chrono::steady_clock::now() + options_.connect_timeout, options_.interrupt_fd);
  if (!c) return c.error();
  (*c)->set_statement_timeout(options_.statement_timeout);
  auto m = schema::migrate(**c);
  if (!m) return m.error();
  auto host = (*c)->exec(kUpsertHost, Params().text(options_.host_name).text(options_.software_version));
  if (!host) return host.error();
  host_id_ = host->int4(0, 0);
  conn_ = std::move(*c);
  return Ok{};
}

std::string Writer::server() const { return conn_ ? conn_->server() : std::string(); }

Result<MigrateOutcome> Writer::migrate() {
  if (!conn_ || conn_->broken()) {
    // Connect without the automatic migration, to report what this one did.
    conn_.reset();
    auto c = Connection::open_until(options_.url, detail::Role::primary,
                                    std::chrono::steady_clock::now() + options_.connect_timeout);
    if (!c) return c.error();
    (*c)->set_statement_timeout(options_.statement_timeout);
    conn_ = std::move(*c);
  }
  auto m = schema::migrate(*conn_);
  if (!m) return m;
  auto host = conn_->exec(kUpsertHost, Params().text(options_.host_name).text(options_.software_version));
  if (!host) return host.error();
  host_id_ = host->int4(0, 0);
  return m;
}

Result<std::uint32_t> Writer::schema_version() {
  if (auto c = ensure_connected(); !c) return c.error();
  auto v = schema::read_version(*conn_);
  if (!v) return v.error();
  return v->applied;
}

Result<Ok> Writer::heartbeat() {
  if (auto c = ensure_connected(); !c) return c.error();
  auto host = conn_->exec(kUpsertHost, Params().text(options_.host_name).text(options_.software_version));
  if (!host) return host.error();
  host_id_ = host->int4(0, 0);
  return Ok{};
}

Result<PublishOutcome> Writer::publish(const shard::ShardView& view, const Hash& shard_hash, std::string_view cas) {
  if (!valid_cas_set(cas))
    return make_error(kRuleArgument, "the shard's CAS set is not URLs separated by one space each");
  if (auto c = ensure_connected(); !c) return c.error();
  Connection& c = *conn_;

  // What the shard contributes, each xorb and file once, in hash order so
  // concurrent publishers lock shared rows in the same order.
  std::vector<XorbRow> xorbs;
  xorbs.reserve(view.xorbs().size());
  for (const auto& x : view.xorbs()) xorbs.push_back({x.hash(), x.raw(), std::int32_t(x.num_chunks()), x});
  std::stable_sort(xorbs.begin(), xorbs.end(), [](const XorbRow& a, const XorbRow& b) { return a.hash < b.hash; });
  xorbs.erase(
      std::unique(xorbs.begin(), xorbs.end(), [](const XorbRow& a, const XorbRow& b) { return a.hash == b.hash; }),
      xorbs.end());
  struct FileRow {
    Hash hash;
    std::optional<Hash> sha256;
    std::span<const std::uint8_t> block;
  };
  std::vector<FileRow> files;
  for (const auto& f : view.files())
    files.push_back({f.hash(), f.sha256(), view.bytes().subspan(f.offset(), f.byte_size())});
  std::stable_sort(files.begin(), files.end(), [](const FileRow& a, const FileRow& b) { return a.hash < b.hash; });
  files.erase(
      std::unique(files.begin(), files.end(), [](const FileRow& a, const FileRow& b) { return a.hash == b.hash; }),
      files.end());
  std::uint64_t total_chunks = 0;
  for (const auto& x : view.xorbs()) total_chunks += x.num_chunks();
  std::optional<std::int64_t> expiry;
  if (auto e = view.expiry()) expiry = wire::saturating_int8(*e);

  auto once = [&]() -> Result<PublishOutcome> {
    PublishOutcome out;
    auto existing =
        c.exec("SELECT id, coalesce(cas, '{}') @> string_to_array($2, ' ') FROM dedupd.shard WHERE hash = $1 FOR SHARE",
               Params().bytea(shard_hash.bytes).text(cas));
    if (!existing) return existing.error();
    if (existing->size() == 1) {
      auto hold = c.exec("INSERT INTO dedupd.hold (shard_id, host_id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                         Params().int8(existing->int8(0, 0)).int4(host_id_));
      if (!hold) return hold.error();
      out.result = hold->affected() ? PublishResult::new_holder : PublishResult::already_held;
      auto learned = merge_cas(c, existing->int8(0, 0), existing->boolean(0, 1), cas);
      if (!learned) return learned.error();
      out.cas_learned = *learned;
      return out;
    }

    std::optional<std::int32_t> key_id;
    if (view.keyed()) {
      Key key = view.chunk_key();
      auto ins = c.exec("INSERT INTO dedupd.chunk_key (key) VALUES ($1) ON CONFLICT (key) DO NOTHING",
                        Params().bytea(key.bytes));
      if (!ins) return ins.error();
      auto id = c.exec("SELECT id FROM dedupd.chunk_key WHERE key = $1", Params().bytea(key.bytes));
      if (!id) return id.error();
      if (id->size() != 1) return make_error(kRuleRetry, "key row vanished");
      key_id = id->int4(0, 0);
    }

    std::vector<std::int32_t> xorb_ids;
    if (!xorbs.empty()) {
      std::vector<std::span<const std::uint8_t>> hashes, blocks;
      std::vector<std::int32_t> counts;
      for (const auto& x : xorbs) {
        hashes.push_back(x.hash.bytes);
        blocks.push_back(x.block);
        counts.push_back(x.chunks);
      }
      auto ins = c.exec(
          "INSERT INTO dedupd.xorb AS x (hash, key_id, chunks, refs, cas_block) "
          "SELECT h, $4, n, 1, b FROM unnest($1::bytea[], $2::int4[], $3::bytea[]) AS u (h, n, b) "
          "ON CONFLICT (hash, key_id) DO UPDATE SET refs = x.refs + 1 "
          "RETURNING x.id, x.hash, x.xmax = 0",
          Params().bytea_array(hashes).int4_array(counts).bytea_array(blocks).int4(key_id.value_or(0)));
      if (!ins) return ins.error();
      std::unordered_map<Hash, std::pair<std::int32_t, bool>> by_hash;
      for (int r = 0; r < ins->size(); ++r) by_hash[ins->hash(r, 1)] = {ins->int4(r, 0), ins->boolean(r, 2)};
      wire::CopyBody copy;
      std::uint64_t rows = 0;
      for (const auto& x : xorbs) {
        auto it = by_hash.find(x.hash);
        if (it == by_hash.end()) return make_error(kRuleProtocol, "xorb insert did not return " + x.hash.to_string());
        xorb_ids.push_back(it->second.first);
        if (!it->second.second) continue;
        ++out.new_xorbs;
        for (std::uint32_t i = 0; i < x.view.num_chunks(); ++i) {
          const std::uint8_t* hash = x.view.chunk_hash_bytes(i);
          const shard::ChunkEntry e = x.view.chunk(i);
          copy.begin_row(7);
          copy.int8(wire::prefix_of(hash));
          copy.int4(it->second.first);
          copy.int4(std::int32_t(i));
          copy.int4(wire::hash_check_of(hash));
          copy.int4(std::int32_t(e.byte_start));
          copy.int4(std::int32_t(e.unpacked_bytes));
          copy.int4(std::int32_t(e.flags));
          ++rows;
        }
      }
      if (rows) {
        auto done = c.copy_in(
            "COPY dedupd.chunk (prefix, xorb_id, chunk_index, hash_check, byte_start, unpacked_bytes, flags) "
            "FROM STDIN (FORMAT binary)",
            copy.finish());
        if (!done) return done.error();
      }
      out.new_chunk_entries = rows;
    }

    std::vector<std::int32_t> file_ids;
    if (!files.empty()) {
      std::vector<std::span<const std::uint8_t>> hashes, shas, blocks;
      for (const auto& f : files) {
        hashes.push_back(f.hash.bytes);
        shas.push_back(f.sha256 ? std::span<const std::uint8_t>(f.sha256->bytes) : std::span<const std::uint8_t>());
        blocks.push_back(f.block);
      }
      auto ins = c.exec(
          "INSERT INTO dedupd.file AS f (hash, sha256, refs, block) "
          "SELECT h, NULLIF(s, ''::bytea), 1, b FROM unnest($1::bytea[], $2::bytea[], $3::bytea[]) AS u (h, s, b) "
          "ON CONFLICT (hash) DO UPDATE SET refs = f.refs + 1 "
          "RETURNING f.id, f.xmax = 0",
          Params().bytea_array(hashes).bytea_array(shas).bytea_array(blocks));
      if (!ins) return ins.error();
      for (int r = 0; r < ins->size(); ++r) {
        file_ids.push_back(ins->int4(r, 0));
        if (ins->boolean(r, 1)) ++out.new_files;
      }
    }

    Params shard_params;
    shard_params.bytea(shard_hash.bytes);
    if (key_id) shard_params.int4(*key_id);
    else shard_params.null(wire::kOidInt4);
    if (expiry) shard_params.int8(*expiry);
    else shard_params.null(wire::kOidInt8);
    // The shard's own xorb order (schema 2), each xorb once, at its first place.
    std::vector<std::int32_t> xorb_order;
    {
      std::unordered_map<Hash, std::int32_t> id_of;
      for (std::size_t i = 0; i < xorbs.size(); ++i) id_of.emplace(xorbs[i].hash, xorb_ids[i]);
      for (const auto& x : view.xorbs())
        if (auto it = id_of.find(x.hash()); it != id_of.end()) {
          xorb_order.push_back(it->second);
          id_of.erase(it);
        }
    }
    shard_params.int8(std::int64_t(total_chunks)).int4_array(xorb_ids).int4_array(file_ids).int4_array(xorb_order);
    auto ins = c.exec(
        "INSERT INTO dedupd.shard (hash, key_id, expiry, chunks, xorb_ids, file_ids, xorb_order, cas) "
        "VALUES ($1, $2, $3, $4, $5, $6, $7, string_to_array(NULLIF($8, ''), ' ')) "
        "ON CONFLICT (hash) DO NOTHING RETURNING id",
        shard_params.text(cas));
    if (!ins) return ins.error();
    if (ins->size() != 1) return make_error(kRuleRetry, "the same shard was published meanwhile");
    auto hold = c.exec("INSERT INTO dedupd.hold (shard_id, host_id) VALUES ($1, $2)",
                       Params().int8(ins->int8(0, 0)).int4(host_id_));
    if (!hold) return hold.error();
    if (key_id) {
      // Last: the key row is the one row every publisher of this key updates.
      auto live = c.exec("UPDATE dedupd.chunk_key SET shards = shards + 1 WHERE id = $1", Params().int4(*key_id));
      if (!live) return live.error();
    } else if (out.new_xorbs > 0) {
      // Last, for the same reason: raw xorbs came in, and this host's
      // raw_publish row moves the raw generation (reader_sql::kRawGeneration)
      // with them, or a raw filter complete for the old one would hide them.
      // A row per host: its publishes are serial already, and one row for
      // the fleet would serialize every host's.
      auto moved =
          c.exec("INSERT INTO dedupd.raw_publish (host_id) VALUES ($1) ON CONFLICT (host_id) DO UPDATE SET at = now()",
                 Params().int4(host_id_));
      if (!moved) return moved.error();
    }
    out.result = PublishResult::added;
    return out;
  };

  for (int attempt = 0;; ++attempt) {
    auto r = in_transaction<PublishOutcome>(c, once);
    if (r || attempt >= 4) return r;
    if (r.error().rule != std::string(kRuleRetry) && !retryable(c.last_sqlstate())) return r;
  }
}

Result<bool> Writer::drop_hold(const Hash& shard_hash) {
  if (auto c = ensure_connected(); !c) return c.error();
  Connection& c = *conn_;
  return retrying<bool>(c, [&]() -> Result<bool> {
    auto s = c.exec("SELECT id FROM dedupd.shard WHERE hash = $1 FOR UPDATE", Params().bytea(shard_hash.bytes));
    if (!s) return s.error();
    if (s->size() == 0) return false;
    return release(c, s->int8(0, 0), host_id_);
  });
}

Result<std::uint64_t> Writer::expire(std::uint64_t now) {
  if (auto c = ensure_connected(); !c) return c.error();
  Connection& c = *conn_;
  std::int64_t at = wire::saturating_int8(now);
  auto due = c.exec("SELECT id FROM dedupd.shard WHERE expiry <= $1 ORDER BY expiry", Params().int8(at));
  if (!due) return due.error();
  std::uint64_t gone = 0;
  for (int r = 0; r < due->size(); ++r) {
    std::int64_t id = due->int8(r, 0);
    // Each shard on its own: another host expiring the same ones at once
    // finds them gone and skips them.
    auto one = retrying<bool>(c, [&]() -> Result<bool> {
      auto s =
          c.exec("SELECT id FROM dedupd.shard WHERE id = $1 AND expiry <= $2 FOR UPDATE", Params().int8(id).int8(at));
      if (!s) return s.error();
      if (s->size() == 0) return false;
      if (auto d = drop_shard(c, id); !d) return d.error();
      return true;
    });
    if (!one) return one.error();
    if (*one) ++gone;
  }
  return gone;
}

Result<std::vector<Hash>> Writer::held_shards(const std::optional<Hash>& after, std::size_t max,
                                              std::vector<std::string>* cas) {
  if (auto c = ensure_connected(); !c) return c.error();
  Connection& c = *conn_;
  // An empty bytea sorts before every hash.
  Hash none{};
  auto r = c.exec(
      "SELECT s.hash, coalesce(array_to_string(s.cas, ' '), '') FROM dedupd.hold h "
      "JOIN dedupd.shard s ON s.id = h.shard_id "
      "WHERE h.host_id = $1 AND s.hash > $2 ORDER BY s.hash LIMIT $3",
      Params()
          .int4(host_id_)
          .bytea(after ? std::span<const std::uint8_t>(after->bytes)
                       : std::span<const std::uint8_t>(none.bytes.data(), 0))
          .int8(wire::saturating_int8(max)));
  if (!r) return r.error();
  std::vector<Hash> out;
  out.reserve(std::size_t(r->size()));
  if (cas) cas->clear();
  for (int i = 0; i < r->size(); ++i) {
    out.push_back(r->hash(i, 0));
    if (cas) cas->emplace_back(r->text(i, 1));
  }
  return out;
}

Result<bool> Writer::forget_host(std::string_view host_name) {
  if (auto c = ensure_connected(); !c) return c.error();
  Connection& c = *conn_;
  auto r = retrying<bool>(c, [&]() -> Result<bool> {
    auto h = c.exec("SELECT id FROM dedupd.host WHERE name = $1 FOR UPDATE", Params().text(host_name));
    if (!h) return h.error();
    if (h->size() == 0) return false;
    std::int32_t id = h->int4(0, 0);
    auto held = c.exec("SELECT shard_id FROM dedupd.hold WHERE host_id = $1 ORDER BY shard_id", Params().int4(id));
    if (!held) return held.error();
    for (int i = 0; i < held->size(); ++i) {
      std::int64_t shard_id = held->int8(i, 0);
      auto lock = c.exec("SELECT id FROM dedupd.shard WHERE id = $1 FOR UPDATE", Params().int8(shard_id));
      if (!lock) return lock.error();
      if (lock->size() == 0) continue;
      if (auto rel = release(c, shard_id, id); !rel) return rel.error();
    }
    auto del = c.exec("DELETE FROM dedupd.host WHERE id = $1", Params().int4(id));
    if (!del) return del.error();
    return true;
  });
  // Forgetting ourselves: register again on the next call.
  if (r && *r && host_name == options_.host_name) conn_.reset();
  return r;
}

}  // namespace dedupd::fleet
