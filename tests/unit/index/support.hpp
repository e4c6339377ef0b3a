// Shared fixtures of the index tests: an index in a scratch directory, and a
// raw look at its tables (to prove "nothing left" without trusting the API).
#pragma once

#include <gtest/gtest.h>
#include <lmdb.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "index/index.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/unit/index/gen.hpp"

namespace dedupd::index::gen {

using tests::TempDir;

inline const char* const kTables[] = {"meta",        "shards", "shard_refs",  "expiry", "keys",
                                      "xorb_ids",    "xorbs",  "xorb_shards", "chunks", "files",
                                      "file_shards", "sha256", "sources"};

// An index directory opened with plain LMDB calls while no Index has it
// open (to prove "nothing left" without trusting the API): one transaction,
// read-only unless `write`, aborted with the object unless committed.
class RawIndex {
 public:
  explicit RawIndex(const std::string& dir, bool write = false) {
    EXPECT_EQ(mdb_env_create(&env_), 0);
    mdb_env_set_maxdbs(env_, 32);
    mdb_env_set_mapsize(env_, 1ull << 30);
    EXPECT_EQ(mdb_env_open(env_, dir.c_str(), write ? 0 : MDB_RDONLY, 0640), 0);
    EXPECT_EQ(mdb_txn_begin(env_, nullptr, write ? 0 : MDB_RDONLY, &txn_), 0);
  }
  RawIndex(const RawIndex&) = delete;
  RawIndex& operator=(const RawIndex&) = delete;
  ~RawIndex() {
    if (txn_) mdb_txn_abort(txn_);
    mdb_env_close(env_);
  }
  MDB_env* env() const { return env_; }
  MDB_txn* txn() const { return txn_; }
  // The table's handle, or nullopt when it does not exist.
  std::optional<MDB_dbi> table(const char* name, unsigned flags = 0) const {
    MDB_dbi dbi;
    if (mdb_dbi_open(txn_, name, flags, &dbi) != 0) return std::nullopt;
    return dbi;
  }
  int commit() { return mdb_txn_commit(std::exchange(txn_, nullptr)); }

 private:
  MDB_env* env_ = nullptr;
  MDB_txn* txn_ = nullptr;
};

// Items (duplicates included) per table.
inline std::map<std::string, std::size_t> table_items(const std::string& dir) {
  std::map<std::string, std::size_t> out;
  RawIndex raw(dir);
  for (const char* name : kTables) {
    auto dbi = raw.table(name);
    if (!dbi) {
      out[name] = SIZE_MAX;
      continue;
    }
    MDB_stat st;
    mdb_stat(raw.txn(), *dbi, &st);
    out[name] = st.ms_entries;
  }
  return out;
}

// The schema version written in an index.
inline std::uint32_t schema_version_on_disk(const std::string& dir) {
  RawIndex raw(dir);
  std::uint32_t version = 0;
  if (auto meta = raw.table("meta")) {
    MDB_val k{14, const_cast<char*>("schema_version")}, v;
    if (mdb_get(raw.txn(), *meta, &k, &v) == 0 && v.mv_size == 4) std::memcpy(&version, v.mv_data, 4);
  }
  return version;
}

// The xorb records as stored: xorb id -> record bytes.
inline std::map<std::uint32_t, std::vector<std::uint8_t>> stored_xorb_records(const std::string& dir) {
  std::map<std::uint32_t, std::vector<std::uint8_t>> out;
  RawIndex raw(dir);
  auto dbi = raw.table("xorbs");
  EXPECT_TRUE(dbi);
  if (!dbi) return out;
  MDB_cursor* c = nullptr;
  EXPECT_EQ(mdb_cursor_open(raw.txn(), *dbi, &c), 0);
  MDB_val k, v;
  for (int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
    EXPECT_EQ(k.mv_size, 4u);
    auto id = static_cast<const std::uint8_t*>(k.mv_data);
    auto rec = static_cast<const std::uint8_t*>(v.mv_data);
    out[std::uint32_t(id[0]) << 24 | std::uint32_t(id[1]) << 16 | std::uint32_t(id[2]) << 8 | id[3]].assign(
        rec, rec + v.mv_size);
  }
  mdb_cursor_close(c);
  return out;
}

#ifdef DEDUPD_FIXTURE_DIR
// A copy of tests/fixtures/<name>/data.mdb in tmp/idx; its directory.
inline std::string copy_of_fixture_index(const TempDir& tmp, const std::string& name) {
  std::string dir = (tmp / "idx");
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(std::string(DEDUPD_FIXTURE_DIR) + "/" + name + "/data.mdb", dir + "/data.mdb");
  return dir;
}
#endif

// A xorb whose raw chunk hashes all start with `first`: all its entries
// share one chunk table key (the first byte of the stored hash).
inline GenXorb skewed_xorb(std::uint64_t seed, std::size_t n, std::uint8_t first) {
  GenXorb x = gen_xorb(seed, n);
  for (auto& h : x.raw) h.bytes[0] = first;
  return x;
}

// Leaf pages of one key's duplicates in `table`: MDB_GET_MULTIPLE and
// MDB_NEXT_MULTIPLE return one page of a DUPFIXED key at a time.
inline std::size_t pages_of_key(const std::string& dir, const char* table, std::uint8_t key) {
  RawIndex raw(dir);
  auto dbi = raw.table(table);
  EXPECT_TRUE(dbi) << table;
  if (!dbi) return 0;
  MDB_cursor* c = nullptr;
  EXPECT_EQ(mdb_cursor_open(raw.txn(), *dbi, &c), 0);
  std::size_t pages = 0;
  MDB_val k{1, &key}, v;
  if (mdb_cursor_get(c, &k, &v, MDB_SET_KEY) == 0)
    for (int rc = mdb_cursor_get(c, &k, &v, MDB_GET_MULTIPLE); rc == 0;
         rc = mdb_cursor_get(c, &k, &v, MDB_NEXT_MULTIPLE))
      ++pages;
  mdb_cursor_close(c);
  return pages;
}

class IndexFixture : public ::testing::Test {
 protected:
  void SetUp() override { reopen(); }

  void reopen(Options o = {}) {
    idx.reset();
    o.dir = tmp / "idx";
    o.merge_threshold = merge_threshold;
    auto r = Index::open(o);
    ASSERT_TRUE(r) << r.error().to_string();
    idx = std::move(*r);
    if (chunk_filter) {
      auto f = idx->build_chunk_filter();
      ASSERT_TRUE(f) << f.error().to_string();
    }
  }

  IngestResult ingest(const OwnedShard& s, const std::string& path = "", IngestOptions o = {}) {
    auto r = idx->ingest(*s.view, SourceInfo{path, s.bytes.size(), 1}, o);
    EXPECT_TRUE(r) << (r ? "" : r.error().to_string());
    return r ? *r : IngestResult{};
  }

  std::vector<Location> find(const Hash& raw) {
    // The filtered runs must really answer through the filter.
    if (chunk_filter) {
      EXPECT_TRUE(idx->chunk_filter_info().in_service);
    }
    auto r = idx->lookup(raw);
    EXPECT_TRUE(r) << (r ? "" : r.error().to_string());
    return r ? *r : std::vector<Location>{};
  }

  std::vector<Location> find_unfiltered(const Hash& raw) {
    auto r = idx->lookup(raw);
    EXPECT_TRUE(r) << (r ? "" : r.error().to_string());
    return r ? *r : std::vector<Location>{};
  }

  std::vector<std::string> problems() {
    auto p = idx->check_invariants();
    EXPECT_TRUE(p) << (p ? "" : p.error().to_string());
    return p ? *p : std::vector<std::string>{"check failed"};
  }

  Stats stats() {
    auto s = idx->stats();
    EXPECT_TRUE(s);
    return s ? *s : Stats{};
  }

  TempDir tmp;
  std::unique_ptr<Index> idx;
  std::uint64_t merge_threshold = 1u << 18;
  bool chunk_filter = false;  // build the in-memory chunk filter at each open
};

}  // namespace dedupd::index::gen
