// Env::write: what a body's typed result does to its transaction, and that
// growth on MDB_MAP_FULL is bounded.
#include <gtest/gtest.h>
#include <lmdb.h>

#include <string>

#include "index/env.hpp"
#include "tests/support/temp_dir.hpp"

namespace dedupd::index::lmdb {
namespace {

class EnvWrite : public ::testing::Test {
 protected:
  void SetUp() override {
    EnvOptions o;
    o.dir = (tmp / "env");
    o.map_size = 1 << 20;
    o.max_map_size = 1ull << 30;
    o.max_readers = 8;
    o.max_dbs = 4;
    auto e = Env::open(o);
    ASSERT_TRUE(e) << e.error().to_string();
    env = std::move(*e);
    ASSERT_TRUE(env->write([&](MDB_txn* txn) -> TxnResult { return mdb_dbi_open(txn, "t", MDB_CREATE, &dbi); },
                           "creating a table"));
  }

  TxnResult put(MDB_txn* txn, const std::string& key) {
    MDB_val k{key.size(), const_cast<char*>(key.data())}, v{key.size(), const_cast<char*>(key.data())};
    return mdb_put(txn, dbi, &k, &v, 0);
  }
  // One write of `n` values of 4,000 bytes (an overflow page each), keys
  // k0.., counting how often its body ran.
  Status write_pages(int n, int& runs, const char* what) {
    const std::string big(4000, 'x');
    return env->write(
        [&](MDB_txn* txn) -> TxnResult {
          ++runs;
          for (int i = 0; i < n; ++i) {
            std::string key = "k" + std::to_string(i);
            MDB_val k{key.size(), key.data()}, v{big.size(), const_cast<char*>(big.data())};
            if (int rc = mdb_put(txn, dbi, &k, &v, 0)) return rc;
          }
          return TxnResult::commit();
        },
        what);
  }
  bool has(const std::string& key) {
    auto r = env->begin_read();
    EXPECT_TRUE(r);
    MDB_val k{key.size(), const_cast<char*>(key.data())}, v;
    return mdb_get(r->get(), dbi, &k, &v) == 0;
  }

  dedupd::tests::TempDir tmp{"index-env"};
  std::unique_ptr<Env> env;
  MDB_dbi dbi = 0;
};

TEST_F(EnvWrite, CommitKeepsWhatTheBodyWrote) {
  ASSERT_TRUE(env->write([&](MDB_txn* txn) { return put(txn, "a"); }, "a put"));
  EXPECT_TRUE(has("a"));
}

TEST_F(EnvWrite, RollbackIsNotAnErrorAndKeepsNothing) {
  auto s = env->write(
      [&](MDB_txn* txn) -> TxnResult {
        if (auto r = put(txn, "b"); !r.proceed()) return r;
        return TxnResult::rollback();
      },
      "a put rolled back");
  EXPECT_TRUE(s);
  EXPECT_FALSE(has("b"));
}

TEST_F(EnvWrite, TheBodysOwnErrorComesBackAndKeepsNothing) {
  auto s = env->write(
      [&](MDB_txn* txn) -> TxnResult {
        if (auto r = put(txn, "c"); !r.proceed()) return r;
        return make_error(kRuleCorrupt, "a record does not decode");
      },
      "a put that fails");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().rule, kRuleCorrupt);
  EXPECT_EQ(s.error().to_string(), "index.corrupt: a record does not decode");  // no meaningless "at offset 0"
  EXPECT_FALSE(has("c"));
}

TEST_F(EnvWrite, AnLmdbCodeIsAnErrorNamingWhatFailed) {
  auto s = env->write([&](MDB_txn*) -> TxnResult { return MDB_BAD_VALSIZE; }, "a bad put");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().rule, kRuleLmdb);
  EXPECT_NE(s.error().message.find("a bad put"), std::string::npos) << s.error().message;
}

TEST_F(EnvWrite, MapFullGrowsTheMapAndRunsTheBodyAgain) {
  // 4 MiB of values do not fit the 1 MiB map: the body runs again after
  // each growth and commits once they fit.
  int runs = 0;
  auto s = write_pages(1000, runs, "a large write");
  ASSERT_TRUE(s) << s.error().to_string();
  EXPECT_GT(runs, 1);
  EXPECT_GE(env->map_size(), 4u << 20);
  EXPECT_TRUE(has("k999"));
}

// A write a little larger than one step grows the map twice by that step,
// not by one step and then two: the file is the map, and what it holds
// ahead of the pages used stays for good. 600 values of 4,000 bytes (one
// overflow page each, ~2.4 MiB) do not fit 2 MiB and fit 3.
TEST_F(EnvWrite, ASecondGrowthInOneWriteDoesNotDoubleTheStep) {
  int runs = 0;
  auto s = write_pages(600, runs, "a write of two steps and a bit");
  ASSERT_TRUE(s) << s.error().to_string();
  EXPECT_EQ(runs, 3);
  EXPECT_EQ(env->map_size(), 3u << 20) << "1 MiB, then a 1 MiB step twice";
}

TEST_F(EnvWrite, ABodyThatNeverFitsEndsAsMapFull) {
  int runs = 0;
  auto s = env->write(
      [&](MDB_txn*) -> TxnResult {
        ++runs;
        return MDB_MAP_FULL;
      },
      "a write that never fits");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().rule, kRuleMapFull);
  EXPECT_LE(runs, int(Env::kMaxGrowths) + 1);
}

}  // namespace
}  // namespace dedupd::index::lmdb
