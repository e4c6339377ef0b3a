// Opening the index, and the reads other than chunk lookups.
#include "index/index.hpp"

#include <sys/stat.h>

#include <cstring>

#include "index/impl.hpp"
#include "index/open_tables.hpp"

namespace dedupd::index {

using namespace records;
using detail::Cursor;

const char* to_string(ShardState s) {
  switch (s) {
    case ShardState::live:
      return "live";
    case ShardState::expired:
      return "expired";
    case ShardState::removed:
      return "removed";
  }
  return "unknown";
}

const char* to_string(IngestOutcome o) {
  switch (o) {
    case IngestOutcome::added:
      return "added";
    case IngestOutcome::already_present:
      return "already_present";
    case IngestOutcome::previously_gone:
      return "previously_gone";
    case IngestOutcome::expired:
      return "expired";
  }
  return "unknown";
}

Index::Index(std::unique_ptr<OpenIndex> impl) : impl_(std::move(impl)) {}

void Index::set_lmdb_assert_handler(void (*handler)(const char* what)) { lmdb::set_assert_handler(handler); }
Index::~Index() = default;

const std::string& Index::dir() const { return impl_->options.dir; }
std::uint32_t Index::schema_version() const { return impl_->dbs.version; }

Result<std::unique_ptr<Index>> Index::open(const Options& options) {
  if (options.dir.empty()) return make_error(kRuleArgument, "no index directory given");
  auto impl = std::make_unique<OpenIndex>();
  impl->options = options;
  lmdb::EnvOptions eo;
  eo.dir = options.dir;
  eo.map_size = options.map_size;
  eo.max_map_size = std::max(options.max_map_size, options.map_size);
  eo.max_readers = options.max_readers;
  eo.max_dbs = schema::kMaxDbs;
  eo.no_sync = options.no_sync_for_benchmarks;
  eo.read_only = options.read_only;
  eo.observer = options.observer;
  auto env = lmdb::Env::open(eo);
  if (!env) return env.error();
  impl->env = std::move(*env);
  auto dbs = schema::open(*impl->env, options.scope_of_path);
  if (!dbs) return dbs.error();
  impl->dbs = *dbs;
  impl->env->on_commit([im = impl.get()](std::uint64_t id) {
    if (im->filter) im->filter->committed(id);
    if (im->recent_filter) im->recent_filter->committed(id);
    if (auto& c = im->catch_up) {
      if (id != c->next_txn) c->foreign = true;
      c->next_txn = id + 1;
    }
  });
  return std::unique_ptr<Index>(new Index(std::move(impl)));
}

namespace {

// Shards listed in a dupsort table under `key`.
int dup_hashes(MDB_txn* txn, MDB_dbi dbi, MDB_val key, std::vector<Hash>& out) {
  Cursor c;
  if (int rc = c.open(txn, dbi)) return rc;
  MDB_val v;
  int rc;
  for (rc = c.move(&key, &v, MDB_SET_KEY); rc == 0; rc = c.move(&key, &v, MDB_NEXT_DUP))
    if (v.mv_size == 32) out.push_back(Hash::from_bytes(span_of(v)));
  return rc == MDB_NOTFOUND ? 0 : rc;
}

int shard_refs_of(MDB_txn* txn, const schema::Dbs& d, MDB_val key, std::vector<ShardRef>& out) {
  std::vector<Hash> hashes;
  if (int rc = dup_hashes(txn, d.xorb_shards, key, hashes)) return rc;
  for (const Hash& h : hashes) {
    MDB_val k = val(h), v;
    int rc = mdb_get(txn, d.shards, &k, &v);
    if (rc == MDB_NOTFOUND) continue;
    if (rc) return rc;
    if (auto r = detail::shard_ref(h, v)) out.push_back(*r);
  }
  return 0;
}

}  // namespace

Result<std::vector<XorbInfo>> Index::xorb(const Hash& xorb_hash) const {
  auto txn = impl_->env->begin_read();
  if (!txn) return txn.error();
  const auto& d = impl_->dbs;
  std::vector<XorbInfo> out;
  Cursor ids;
  if (int rc = ids.open(txn->get(), d.xorb_ids)) return lmdb::error_of(rc, "reading xorb ids");
  MDB_val k = val(xorb_hash), v;
  int rc;
  for (rc = ids.move(&k, &v, MDB_SET_KEY); rc == 0; rc = ids.move(&k, &v, MDB_NEXT_DUP)) {
    if (v.mv_size != 4) return detail::corrupt("xorb_ids: bad id size");
    MDB_val xk = val(v.mv_data, 4), xv;
    int r2 = mdb_get(txn->get(), d.xorbs, &xk, &xv);
    if (r2 == MDB_NOTFOUND) continue;
    if (r2) return lmdb::error_of(r2, "reading a xorb");
    auto rec = XorbRecordView::decode(xv);
    if (!rec) return detail::corrupt("xorb record of " + xorb_hash.to_string() + " does not decode");
    XorbInfo x;
    x.hash = rec->xorb_hash();
    x.keyed = rec->keyed();
    x.key = rec->key();
    x.header = rec->header();
    x.chunks.reserve(rec->num_chunks());
    for (std::uint32_t i = 0; i < rec->num_chunks(); ++i) x.chunks.push_back(rec->chunk(i));
    x.cas_block = rec->cas_block();
    if ((r2 = shard_refs_of(txn->get(), d, xk, x.shards))) return lmdb::error_of(r2, "reading a xorb's shards");
    out.push_back(std::move(x));
  }
  if (rc != MDB_NOTFOUND) return lmdb::error_of(rc, "reading xorb ids");
  return out;
}

Result<std::optional<FileInfo>> Index::file(const Hash& file_hash) const {
  auto txn = impl_->env->begin_read();
  if (!txn) return txn.error();
  MDB_val k = val(file_hash), v;
  int rc = mdb_get(txn->get(), impl_->dbs.files, &k, &v);
  if (rc == MDB_NOTFOUND) return std::optional<FileInfo>();
  if (rc) return lmdb::error_of(rc, "reading a file");
  auto block = decode_file(v);
  if (!block) return detail::corrupt("file record " + file_hash.to_string() + " does not decode");
  FileInfo f;
  f.hash = block->hash();
  for (std::uint32_t i = 0; i < block->num_terms(); ++i) {
    f.terms.push_back(block->term(i));
    f.size += f.terms.back().unpacked_bytes;
    if (block->has_verification()) f.verification.push_back(block->verification(i).hash);
  }
  f.sha256 = block->sha256();
  if ((rc = dup_hashes(txn->get(), impl_->dbs.file_shards, k, f.shards)))
    return lmdb::error_of(rc, "reading a file's shards");
  return std::optional<FileInfo>(std::move(f));
}

Result<std::vector<Hash>> Index::files_with_sha256(const Hash& sha256) const {
  auto txn = impl_->env->begin_read();
  if (!txn) return txn.error();
  std::vector<Hash> out;
  if (int rc = dup_hashes(txn->get(), impl_->dbs.sha256, val(sha256), out)) return lmdb::error_of(rc, "reading sha256");
  return out;
}

Result<std::optional<ShardInfo>> Index::shard(const Hash& shard_hash) const {
  auto txn = impl_->env->begin_read();
  if (!txn) return txn.error();
  MDB_val k = val(shard_hash), v;
  int rc = mdb_get(txn->get(), impl_->dbs.shards, &k, &v);
  if (rc == MDB_NOTFOUND) return std::optional<ShardInfo>();
  if (rc) return lmdb::error_of(rc, "reading a shard");
  auto rec = decode_shard(v);
  if (!rec) return detail::corrupt("shard record " + shard_hash.to_string() + " does not decode");
  return std::optional<ShardInfo>(to_info(shard_hash, *rec));
}

Result<std::vector<ShardInfo>> Index::shards(std::optional<ShardState> state) const {
  auto txn = impl_->env->begin_read();
  if (!txn) return txn.error();
  Cursor c;
  if (int rc = c.open(txn->get(), impl_->dbs.shards)) return lmdb::error_of(rc, "listing shards");
  std::vector<ShardInfo> out;
  MDB_val k, v;
  int rc;
  for (rc = c.move(&k, &v, MDB_FIRST); rc == 0; rc = c.move(&k, &v, MDB_NEXT)) {
    if (k.mv_size != 32) return detail::corrupt("shards: bad key size");
    Hash h = Hash::from_bytes(span_of(k));
    auto rec = decode_shard(v);
    if (!rec) return detail::corrupt("shard record " + h.to_string() + " does not decode");
    if (!state || rec->state == *state) out.push_back(to_info(h, *rec));
  }
  if (rc != MDB_NOTFOUND) return lmdb::error_of(rc, "listing shards");
  return out;
}

namespace {

int next_expiry_in(MDB_txn* txn, MDB_dbi expiry, std::optional<std::uint64_t>& out) {
  Cursor c;
  if (int rc = c.open(txn, expiry)) return rc;
  MDB_val k, v;
  int rc = c.move(&k, &v, MDB_FIRST);
  out.reset();
  if (rc == MDB_NOTFOUND) return 0;
  if (rc) return rc;
  if (k.mv_size != 8) return MDB_CORRUPTED;
  out = load_be64(static_cast<const std::uint8_t*>(k.mv_data));
  return 0;
}

}  // namespace

Result<std::optional<std::uint64_t>> Index::next_expiry() const {
  auto txn = impl_->env->begin_read();
  if (!txn) return txn.error();
  std::optional<std::uint64_t> out;
  if (int rc = next_expiry_in(txn->get(), impl_->dbs.expiry, out)) return lmdb::error_of(rc, "reading expiry");
  return out;
}

Result<std::vector<Hash>> Index::due(std::uint64_t now) const {
  auto txn = impl_->env->begin_read();
  if (!txn) return txn.error();
  Cursor c;
  if (int rc = c.open(txn->get(), impl_->dbs.expiry)) return lmdb::error_of(rc, "reading expiry");
  std::vector<Hash> out;
  MDB_val k, v;
  int rc;
  for (rc = c.move(&k, &v, MDB_FIRST); rc == 0; rc = c.move(&k, &v, MDB_NEXT)) {
    if (k.mv_size != 8 || v.mv_size != 32) return detail::corrupt("expiry: bad entry size");
    if (load_be64(static_cast<const std::uint8_t*>(k.mv_data)) > now) break;
    out.push_back(Hash::from_bytes(span_of(v)));
  }
  if (rc != 0 && rc != MDB_NOTFOUND) return lmdb::error_of(rc, "reading expiry");
  return out;
}

namespace {

int read_counts(MDB_txn* t, const schema::Dbs& d, Counts& s) {
  int rc;
  if ((rc = schema::get_u64(t, d.meta, schema::kCountLive, s.shards_live)) ||
      (rc = schema::get_u64(t, d.meta, schema::kCountExpired, s.shards_expired)) ||
      (rc = schema::get_u64(t, d.meta, schema::kCountRemoved, s.shards_removed)) ||
      (rc = schema::get_u64(t, d.meta, schema::kCountRejected, s.rejected)))
    return rc;
  MDB_stat st;
  // md_entries counts every duplicate, so these are item counts.
  if ((rc = mdb_stat(t, d.xorbs, &st))) return rc;
  s.xorbs = st.ms_entries;
  if ((rc = mdb_stat(t, d.chunks, &st))) return rc;
  s.chunk_entries = st.ms_entries;
  if ((rc = mdb_stat(t, d.chunks_recent, &st))) return rc;
  s.chunk_entries += st.ms_entries;
  s.recent_chunk_entries = st.ms_entries;
  if ((rc = mdb_stat(t, d.files, &st))) return rc;
  s.files = st.ms_entries;
  return 0;
}

}  // namespace

Result<Counts> Index::counts() const {
  auto txn = impl_->env->begin_read();
  if (!txn) return txn.error();
  Counts c;
  if (int rc = read_counts(txn->get(), impl_->dbs, c)) return lmdb::error_of(rc, "reading counters");
  return c;
}

Result<Stats> Index::stats() const {
  auto txn = impl_->env->begin_read();
  if (!txn) return txn.error();
  const auto& d = impl_->dbs;
  MDB_txn* t = txn->get();
  Stats s;
  int rc;
  if ((rc = read_counts(t, d, s))) return lmdb::error_of(rc, "reading counters");
  {
    Cursor c;
    if ((rc = c.open(t, d.keys))) return lmdb::error_of(rc, "reading keys");
    MDB_val k, v;
    for (rc = c.move(&k, &v, MDB_FIRST); rc == 0; rc = c.move(&k, &v, MDB_NEXT_NODUP)) ++s.keys;
  }
  {
    // Free pages: the freelist's records are page-number lists whose first
    // word is their length (LMDB's IDL layout).
    Cursor c;
    if ((rc = c.open(t, 0))) return lmdb::error_of(rc, "reading the freelist");
    MDB_val k, v;
    std::uint64_t free_pages = 0;
    for (rc = c.move(&k, &v, MDB_FIRST); rc == 0; rc = c.move(&k, &v, MDB_NEXT))
      if (v.mv_size >= sizeof(std::size_t)) {
        std::size_t n;
        std::memcpy(&n, v.mv_data, sizeof n);
        free_pages += n;
      }
    s.free_bytes = free_pages * impl_->env->page_size();
  }
  MDB_envinfo info;
  mdb_env_info(impl_->env->raw(), &info);
  s.page_size = impl_->env->page_size();
  s.map_size = info.me_mapsize;
  s.map_used = (info.me_last_pgno + 1) * s.page_size;
  struct stat fst {};
  if (::stat((impl_->options.dir + "/data.mdb").c_str(), &fst) == 0) s.db_bytes = std::uint64_t(fst.st_size);
  if ((rc = next_expiry_in(t, d.expiry, s.next_expiry))) return lmdb::error_of(rc, "reading expiry");
  s.chunk_filter = chunk_filter_info();
  return s;
}

}  // namespace dedupd::index
