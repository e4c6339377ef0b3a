// Index benchmark: prints a table, asserts nothing. In one run, next to a
// bare LMDB baseline on the same disk with the same durability:
//   ingest rate (chunk entries/s) vs a bare insert loop of 32-byte keys;
//   single and batch lookups/s vs bare mdb_get of the same keys;
//   bytes on disk per chunk entry at 1 M and at the full size;
//   open -> first answer at the full size (data.mdb evicted from the page
//   cache first, with posix_fadvise on our own file only);
//   removal of a 64 Ki-entry shard at 1 M and at full size, and of a 1 M-entry
//   shard at full size.
//
//   bench_index [--chunks N] [--keys K] [--dir D] [--quick]
// Default N = 10,000,000. --quick (ctest smoke) runs 200,000. K (default 4)
// live keys: every tenth shard is keyed, under one of them, as global-dedup
// shards are; a lookup then computes K keyed forms of every query.
#include <fcntl.h>
#include <lmdb.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "index/index.hpp"
#include "tests/unit/index/gen.hpp"

namespace {

using namespace dedupd;
using index::gen::GenXorb;
using Clock = std::chrono::steady_clock;

double secs(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// CPU seconds this process has used: on a shared machine, rates per CPU
// second move much less with the load than rates per wall second.
double cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

constexpr std::size_t kChunksPerXorb = 1024;
constexpr std::size_t kXorbsPerShard = 64;  // 65,536 chunk entries per shard
constexpr std::size_t kChunksPerShard = kChunksPerXorb * kXorbsPerShard;

void die(const std::string& what) {
  std::fprintf(stderr, "bench_index: %s\n", what.c_str());
  std::exit(1);
}

void check(int rc, const char* what) {
  if (rc) die(std::string(what) + ": " + mdb_strerror(rc));
}

struct Row {
  std::string name, value, note;
};
std::vector<Row> rows;
void row(std::string name, std::string value, std::string note = "") {
  std::printf("  %-44s %16s  %s\n", name.c_str(), value.c_str(), note.c_str());
  std::fflush(stdout);
  rows.push_back({std::move(name), std::move(value), std::move(note)});
}
std::string num(double v, int prec = 0) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

// The key of shard number `s` (zero: raw), with `keys` live keys.
shard::Key key_of_shard(std::size_t s, std::size_t keys) {
  if (keys == 0 || s % 10 != 9) return {};
  return index::gen::hash_of_seed(0x6b657900000ull + (s / 10) % keys);
}

// One generated shard: `xorbs` xorbs of kChunksPerXorb chunks, seeds from `seed`.
index::gen::OwnedShard make_shard(std::uint64_t seed, std::size_t xorbs, std::vector<shard::Hash>* sample,
                                  std::size_t sample_every, const shard::Key& key = {}) {
  std::vector<GenXorb> xs;
  xs.reserve(xorbs);
  for (std::size_t i = 0; i < xorbs; ++i) xs.push_back(index::gen::gen_xorb(seed * 4096 + i, kChunksPerXorb));
  index::gen::ShardSpec spec;
  for (const auto& x : xs) spec.xorbs.push_back(&x);
  spec.created = seed;
  spec.key = key;
  if (sample)
    for (const auto& x : xs)
      for (std::size_t i = 0; i < x.raw.size(); i += sample_every) sample->push_back(x.raw[i]);
  return index::gen::own(index::gen::build_shard(spec));
}

std::uint64_t file_size(const std::string& p) {
  std::error_code ec;
  auto n = std::filesystem::file_size(p, ec);
  return ec ? 0 : n;
}

void evict(const std::string& file) {
  int fd = ::open(file.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t total = 10'000'000;
  std::size_t big_xorbs = 1024;  // the "1 M-entry shard": 1024 x 1024 entries
  std::size_t keys = 4;
  std::string base = std::filesystem::temp_directory_path().string();
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") total = 200'000, big_xorbs = 64;
    else if (a == "--chunks" && i + 1 < argc) total = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--keys" && i + 1 < argc) keys = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--dir" && i + 1 < argc) base = argv[++i];
    else die("usage: bench_index [--chunks N] [--keys K] [--dir D] [--quick]");
  }
  std::size_t nshards = std::max<std::size_t>(1, total / kChunksPerShard);
  std::size_t last_xorbs = kXorbsPerShard;
  if (total < kChunksPerShard) last_xorbs = std::max<std::size_t>(1, total / kChunksPerXorb);
  std::size_t n_entries = (nshards - 1) * kChunksPerShard + last_xorbs * kChunksPerXorb;
  std::string root = base + "/dedupd-bench-index-" + std::to_string(::getpid());
  std::filesystem::create_directories(root);
  std::string idx_dir = root + "/index", bare_dir = root + "/bare";
  std::printf(
      "bench_index: %zu chunk entries in %zu shards of up to %zu (every tenth keyed, %zu keys), under %s (fsync on "
      "every commit)\n",
      n_entries, nshards, kChunksPerShard, keys, root.c_str());

  // ---------------------------------------------------------------- ingest
  std::vector<shard::Hash> sample;  // every 10th raw hash, for lookups
  sample.reserve(n_entries / 10 + 1);
  double ingest_s = 0;
  std::size_t ingested = 0;
  double space_1m = 0, used_1m = 0, remove_64k_at_1m = -1;
  {
    auto idx = index::Index::open(index::Options{.dir = idx_dir});
    if (!idx) die(idx.error().to_string());
    for (std::size_t s = 0; s < nshards; ++s) {
      auto shard =
          make_shard(s + 1, s + 1 == nshards ? last_xorbs : kXorbsPerShard, &sample, 10, key_of_shard(s, keys));
      auto t0 = Clock::now();
      auto view = shard::ShardView::parse(shard.bytes);
      if (!view) die(view.error().to_string());
      auto r = (*idx)->ingest(*view, index::SourceInfo{"/bench/" + std::to_string(s), shard.bytes.size(), 0});
      auto t1 = Clock::now();
      if (!r) die(r.error().to_string());
      ingest_s += secs(t0, t1);
      ingested += r->new_chunk_entries;
      if (ingested >= 1'000'000 && space_1m == 0) {
        auto st = (*idx)->stats();
        space_1m = double(st->db_bytes) / double(st->chunk_entries);
        used_1m = double(st->map_used - st->free_bytes) / double(st->chunk_entries);
        // Removal of a 64 Ki-entry shard at ~1 M (ingested and removed
        // again, so the index stays the same).
        auto extra = make_shard(900000 + s, kXorbsPerShard, nullptr, 1);
        auto v = shard::ShardView::parse(extra.bytes);
        if (!(*idx)->ingest(*v, {})) die("extra ingest");
        auto r0 = Clock::now();
        if (!(*idx)->remove(extra.hash)) die("remove");
        remove_64k_at_1m = secs(r0, Clock::now());
      }
    }
  }
  double ingest_rate = double(ingested) / ingest_s;

  // Bare LMDB: same number of random 32-byte keys, 16-byte values, same
  // transaction size, same durability.
  double bare_s = 0;
  {
    MDB_env* env;
    check(mdb_env_create(&env), "create");
    mdb_env_set_mapsize(env, std::size_t(4) << 30);
    std::filesystem::create_directories(bare_dir);
    check(mdb_env_open(env, bare_dir.c_str(), MDB_NOTLS | MDB_NORDAHEAD, 0640), "open");
    MDB_dbi dbi;
    std::uint8_t value[16] = {1};
    std::size_t done = 0;
    std::size_t shard_no = 0;
    while (done < n_entries) {
      // The same hashes as the index got (same generator), so the lookups
      // below ask both for the same keys.
      std::size_t xorbs = shard_no + 1 == nshards ? last_xorbs : kXorbsPerShard;
      std::vector<shard::Hash> shard_keys;
      shard_keys.reserve(xorbs * kChunksPerXorb);
      for (std::size_t i = 0; i < xorbs; ++i) {
        auto x = index::gen::gen_xorb((shard_no + 1) * 4096 + i, kChunksPerXorb);
        shard_keys.insert(shard_keys.end(), x.raw.begin(), x.raw.end());
      }
      auto t0 = Clock::now();
      MDB_txn* txn;
      check(mdb_txn_begin(env, nullptr, 0, &txn), "begin");
      check(mdb_dbi_open(txn, nullptr, 0, &dbi), "dbi");
      for (const auto& k : shard_keys) {
        MDB_val kv{32, const_cast<std::uint8_t*>(k.data())}, vv{16, value};
        check(mdb_put(txn, dbi, &kv, &vv, 0), "put");
      }
      check(mdb_txn_commit(txn), "commit");
      bare_s += secs(t0, Clock::now());
      done += shard_keys.size();
      ++shard_no;
    }
    MDB_stat st;
    MDB_txn* txn;
    check(mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn), "begin");
    mdb_stat(txn, dbi, &st);
    mdb_txn_abort(txn);
    mdb_env_close(env);
    row("bare LMDB: bytes per 32-byte key + 16 B value",
        num(double(file_size(bare_dir + "/data.mdb")) / double(st.ms_entries), 1));
  }
  double bare_rate = double(n_entries) / bare_s;
  row("ingest: chunk entries/s (parse+hash+txn)", num(ingest_rate), "");
  row("bare LMDB insert loop: keys/s", num(bare_rate), "");
  row("ingest / bare ratio", num(ingest_rate / bare_rate, 2), "goal >= 0.5, and >= 1 M/s");

  // ---------------------------------------------------------------- lookups
  std::mt19937_64 rng(42);
  std::vector<shard::Hash> queries = sample;
  std::shuffle(queries.begin(), queries.end(), rng);
  if (queries.size() > 1'000'000) queries.resize(1'000'000);
  std::vector<shard::Hash> misses;
  for (std::size_t i = 0; i < queries.size(); ++i) misses.push_back(index::gen::hash_of_seed(0xABCDEF00000ull + i));

  index::Stats st_full;
  {
    auto idx = index::Index::open(index::Options{.dir = idx_dir});
    if (!idx) die(idx.error().to_string());
    st_full = *(*idx)->stats();
    const std::size_t single_n = std::min<std::size_t>(queries.size(), 200'000);
    // Warm both the same way: one pass of batch lookups first.
    index::BatchResult out;
    for (std::size_t at = 0; at < queries.size(); at += 10'000)
      (void)(*idx)->lookup_batch(std::span(queries).subspan(at, std::min<std::size_t>(10'000, queries.size() - at)),
                                 out);

    auto t0 = Clock::now();
    std::size_t found = 0;
    for (std::size_t i = 0; i < single_n; ++i) found += !(*idx)->lookup(queries[i])->empty();
    double single_rate = double(single_n) / secs(t0, Clock::now());
    if (found != single_n) die("single lookups missed " + std::to_string(single_n - found));

    double last_cpu_rate = 0;  // of the last batch_rate_of
    auto batch_rate_of = [&](const std::vector<shard::Hash>& q, std::size_t& hits) {
      hits = 0;
      auto b0 = Clock::now();
      double c0 = cpu_now();
      for (std::size_t at = 0; at < q.size(); at += 10'000) {
        auto part = std::span(q).subspan(at, std::min<std::size_t>(10'000, q.size() - at));
        if (!(*idx)->lookup_batch(part, out)) die("batch");
        for (std::size_t i = 0; i < part.size(); ++i) hits += !out.of(i).empty();
      }
      last_cpu_rate = double(q.size()) / (cpu_now() - c0);
      return double(q.size()) / secs(b0, Clock::now());
    };
    std::size_t hits;
    double batch_hit_rate = batch_rate_of(queries, hits);
    if (hits != queries.size()) die("batch lookups missed");
    double batch_miss_rate = batch_rate_of(misses, hits);
    if (hits != 0) die("batch misses hit");

    // The same with the in-memory chunk filter in service (as dedupd runs).
    auto fb0 = Clock::now();
    auto filter = (*idx)->build_chunk_filter();
    if (!filter) die(filter.error().to_string());
    double filter_build_s = secs(fb0, Clock::now());
    t0 = Clock::now();
    found = 0;
    for (std::size_t i = 0; i < single_n; ++i) found += !(*idx)->lookup(queries[i])->empty();
    double single_rate_f = double(single_n) / secs(t0, Clock::now());
    if (found != single_n) die("filtered single lookups missed");
    double batch_hit_rate_f = batch_rate_of(queries, hits);
    double batch_hit_cpu_rate_f = last_cpu_rate;
    if (hits != queries.size()) die("filtered batch lookups missed");
    double batch_miss_rate_f = batch_rate_of(misses, hits);
    if (hits != 0) die("filtered batch misses hit");

    // Bare mdb_get of the same keys.
    MDB_env* env;
    check(mdb_env_create(&env), "create");
    mdb_env_set_mapsize(env, std::size_t(4) << 30);
    check(mdb_env_open(env, bare_dir.c_str(), MDB_NOTLS | MDB_NORDAHEAD | MDB_RDONLY, 0640), "open");
    MDB_txn* txn;
    MDB_dbi dbi;
    check(mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn), "begin");
    check(mdb_dbi_open(txn, nullptr, 0, &dbi), "dbi");
    mdb_txn_reset(txn);
    double bare_cpu_rate = 0;  // of the last bare_get
    auto bare_get = [&](const std::vector<shard::Hash>& q, std::size_t per_txn) {
      std::size_t hit = 0;
      auto b0 = Clock::now();
      double c0 = cpu_now();
      for (std::size_t at = 0; at < q.size(); at += per_txn) {
        check(mdb_txn_renew(txn), "renew");
        for (std::size_t i = at; i < std::min(q.size(), at + per_txn); ++i) {
          MDB_val k{32, const_cast<std::uint8_t*>(q[i].data())}, v;
          hit += mdb_get(txn, dbi, &k, &v) == 0;
        }
        mdb_txn_reset(txn);
      }
      bare_cpu_rate = double(q.size()) / (cpu_now() - c0);
      return std::make_pair(double(q.size()) / secs(b0, Clock::now()), hit);
    };
    bare_get(queries, 10'000);  // warm
    auto [bare_single, h1] = bare_get(std::vector<shard::Hash>(queries.begin(), queries.begin() + single_n), 1);
    auto [bare_batch, h2] = bare_get(queries, 10'000);
    double bare_batch_cpu = bare_cpu_rate;
    auto [bare_miss, h3] = bare_get(misses, 10'000);
    if (h1 != single_n || h2 != queries.size() || h3 != 0) die("bare lookups disagree");
    mdb_txn_abort(txn);
    mdb_env_close(env);

    row("single lookup (hits): lookups/s", num(single_rate), "one pooled read txn per call");
    row("bare mdb_get, one txn renew per get: /s", num(bare_single));
    row("single ratio", num(single_rate / bare_single, 2), "goal >= 0.5");
    row("batch lookup (hits, 10k per batch): /s", num(batch_hit_rate), "goal >= 1 M/s");
    row("bare mdb_get, 10k per txn (hits): /s", num(bare_batch));
    row("batch ratio (hits)", num(batch_hit_rate / bare_batch, 2), "goal >= 0.5");
    row("batch lookup (misses): /s", num(batch_miss_rate));
    row("bare mdb_get (misses): /s", num(bare_miss));
    row("batch ratio (misses)", num(batch_miss_rate / bare_miss, 2));
    row("chunk filter: build ms / MiB",
        num(filter_build_s * 1000, 0) + " / " + num(double(filter->bytes) / (1 << 20), 1),
        std::to_string(filter->added) + " entries");
    row("filtered single lookup (hits): /s", num(single_rate_f), "ratio " + num(single_rate_f / bare_single, 2));
    row("filtered batch lookup (hits): /s", num(batch_hit_rate_f), "ratio " + num(batch_hit_rate_f / bare_batch, 2));
    row("  per CPU second: filtered batch (hits) /s", num(batch_hit_cpu_rate_f),
        "ratio " + num(batch_hit_cpu_rate_f / bare_batch_cpu, 2) + "; goal >= 1 M/s at 1 M, >= 0.5 at 10 M");
    row("  per CPU second: bare mdb_get, 10k per txn /s", num(bare_batch_cpu));
    row("filtered batch lookup (misses): /s", num(batch_miss_rate_f), "ratio " + num(batch_miss_rate_f / bare_miss, 2));
  }

  // ---------------------------------------------------------------- space
  row("bytes on disk per chunk entry at ~1 M", num(space_1m, 1), "data.mdb size / entries; goal <= 80");
  row("  of which pages in use per entry at ~1 M", num(used_1m, 1));
  row("bytes on disk per chunk entry at " + std::to_string(st_full.chunk_entries),
      num(double(st_full.db_bytes) / double(st_full.chunk_entries), 1), "goal <= 80");
  row("  of which pages in use per entry",
      num(double(st_full.map_used - st_full.free_bytes) / double(st_full.chunk_entries), 1));

  // ---------------------------------------------------------------- open
  {
    evict(idx_dir + "/data.mdb");
    auto t0 = Clock::now();
    auto idx = index::Index::open(index::Options{.dir = idx_dir});
    if (!idx) die(idx.error().to_string());
    auto r = (*idx)->lookup(queries.front());
    double open_s = secs(t0, Clock::now());
    if (!r || r->empty()) die("first query after open");
    row("open -> first answer (cold data.mdb), ms", num(open_s * 1000, 2), "goal <= 100 ms at 10 M");

    // Removal cost: a 64 Ki-entry shard at full size (compare with ~1 M),
    // and a 1 M-entry shard.
    auto extra = make_shard(800000, kXorbsPerShard, nullptr, 1);
    auto v = shard::ShardView::parse(extra.bytes);
    if (!(*idx)->ingest(*v, {})) die("extra ingest");
    auto r0 = Clock::now();
    if (!(*idx)->remove(extra.hash)) die("remove");
    double remove_64k_full = secs(r0, Clock::now());
    if (remove_64k_at_1m >= 0) row("remove a 65,536-entry shard at ~1 M, ms", num(remove_64k_at_1m * 1000, 1));
    row("remove a 65,536-entry shard at full size, ms", num(remove_64k_full * 1000, 1),
        "cost follows the shard, not the index");

    auto big = make_shard(810000, big_xorbs, nullptr, 1);
    auto bv = shard::ShardView::parse(big.bytes);
    auto i0 = Clock::now();
    auto bi = (*idx)->ingest(*bv, {});
    if (!bi) die(bi.error().to_string());
    double big_ingest = secs(i0, Clock::now());
    auto b0 = Clock::now();
    double rc0 = cpu_now();
    auto rm = (*idx)->remove(big.hash);
    double big_remove = secs(b0, Clock::now()), big_remove_cpu = cpu_now() - rc0;
    if (!rm || rm->outcome != index::RemoveOutcome::removed) die("big remove");
    std::string big_n = std::to_string(big_xorbs * kChunksPerXorb);
    row("ingest a " + big_n + "-entry shard, ms", num(big_ingest * 1000, 1));
    row("remove a " + big_n + "-entry shard, ms", num(big_remove * 1000, 1), "goal <= 2000 ms for 1 M");
    row("  of which CPU, ms", num(big_remove_cpu * 1000, 1), "the rest is the commit's fsync, and the load");
  }

  std::error_code ec;
  std::filesystem::remove_all(root, ec);
  return 0;
}
