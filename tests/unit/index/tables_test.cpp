// The meta table's counters (tables.hpp): an absent one reads 0, a value of
// the wrong size is damage, and additions go both ways.
#include <gtest/gtest.h>
#include <lmdb.h>

#include <cstdint>

#include "index/env.hpp"
#include "index/tables.hpp"
#include "tests/support/temp_dir.hpp"

namespace dedupd::index::schema {
namespace {

class MetaCounters : public ::testing::Test {
 protected:
  void SetUp() override {
    lmdb::EnvOptions o;
    o.dir = tmp / "env";
    o.map_size = 1 << 20;
    o.max_map_size = 1 << 24;
    o.max_readers = 8;
    o.max_dbs = 2;
    auto e = lmdb::Env::open(o);
    ASSERT_TRUE(e) << e.error().to_string();
    env = std::move(*e);
    ASSERT_EQ(mdb_txn_begin(env->raw(), nullptr, 0, &txn), 0);
    ASSERT_EQ(mdb_dbi_open(txn, "meta", MDB_CREATE, &meta), 0);
  }
  void TearDown() override {
    if (txn) mdb_txn_abort(txn);
  }
  tests::TempDir tmp{"tables"};
  std::unique_ptr<lmdb::Env> env;
  MDB_txn* txn = nullptr;
  MDB_dbi meta = 0;
};

TEST_F(MetaCounters, AnAbsentCounterReadsZero) {
  std::uint64_t v = 7;
  EXPECT_EQ(get_u64(txn, meta, kCountLive, v), 0);
  EXPECT_EQ(v, 0u);
}

TEST_F(MetaCounters, PutThenAddBothWays) {
  ASSERT_EQ(put_u64(txn, meta, kNextXorbId, 41), 0);
  ASSERT_EQ(add_u64(txn, meta, kNextXorbId, 2), 0);
  ASSERT_EQ(add_u64(txn, meta, kNextXorbId, -1), 0);
  std::uint64_t v = 0;
  ASSERT_EQ(get_u64(txn, meta, kNextXorbId, v), 0);
  EXPECT_EQ(v, 42u);
  ASSERT_EQ(add_u64(txn, meta, kCountRemoved, 3), 0);
  ASSERT_EQ(get_u64(txn, meta, kCountRemoved, v), 0);
  EXPECT_EQ(v, 3u);
}

TEST_F(MetaCounters, AValueOfAnotherSizeIsDamage) {
  MDB_val k = meta_key(kCountExpired);
  std::uint32_t four = 1;
  MDB_val v{sizeof four, &four};
  ASSERT_EQ(mdb_put(txn, meta, &k, &v, 0), 0);
  std::uint64_t out = 9;
  EXPECT_EQ(get_u64(txn, meta, kCountExpired, out), MDB_CORRUPTED);
  EXPECT_EQ(add_u64(txn, meta, kCountExpired, 1), MDB_CORRUPTED);
}

TEST(MetaCounterNames, EachShardStateHasItsCounter) {
  EXPECT_STREQ(counter_of(ShardState::live), kCountLive);
  EXPECT_STREQ(counter_of(ShardState::expired), kCountExpired);
  EXPECT_STREQ(counter_of(ShardState::removed), kCountRemoved);
}

}  // namespace
}  // namespace dedupd::index::schema
