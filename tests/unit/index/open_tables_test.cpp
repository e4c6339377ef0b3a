// Opening the tables: another schema version and a foreign LMDB
// environment are refused with a clear error.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "index/index.hpp"
#include "index/records.hpp"
#include "index/tables.hpp"
#include "shard/mapped_file.hpp"
#include "tests/unit/index/layouts.hpp"
#include "tests/unit/index/support.hpp"

namespace dedupd::index::gen {
namespace {

using ::testing::HasSubstr;

void set_schema_version(const std::string& dir, std::uint32_t version) {
  MDB_env* env;
  ASSERT_EQ(mdb_env_create(&env), 0);
  mdb_env_set_maxdbs(env, 32);
  ASSERT_EQ(mdb_env_open(env, dir.c_str(), 0, 0640), 0);
  MDB_txn* txn;
  ASSERT_EQ(mdb_txn_begin(env, nullptr, 0, &txn), 0);
  MDB_dbi meta;
  ASSERT_EQ(mdb_dbi_open(txn, "meta", 0, &meta), 0);
  MDB_val k{14, const_cast<char*>("schema_version")}, v{4, &version};
  ASSERT_EQ(mdb_put(txn, meta, &k, &v, 0), 0);
  ASSERT_EQ(mdb_txn_commit(txn), 0);
  mdb_env_close(env);
}

TEST_P(IndexTest, AnotherSchemaVersionIsAClearError) {
  idx.reset();
  set_schema_version(tmp / "idx", 99);
  Options o;
  o.dir = tmp / "idx";
  auto r = Index::open(o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().rule, kRuleSchema);
  EXPECT_THAT(r.error().message, HasSubstr("schema version 99"));
  EXPECT_THAT(r.error().message, HasSubstr("reads version " + std::to_string(schema::kVersion)));
  EXPECT_THAT(r.error().message, HasSubstr("newer dedupd"));
  // Refusing must not have touched it.
  EXPECT_EQ(table_items(tmp / "idx")["meta"], 1u);
  set_schema_version(tmp / "idx", 0);
  r = Index::open(o);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("no upgrade path"));
}

TEST(IndexSchema, ForeignLmdbEnvironmentIsRefused) {
  TempDir tmp;
  MDB_env* env;
  ASSERT_EQ(mdb_env_create(&env), 0);
  ASSERT_EQ(mdb_env_open(env, tmp.path().c_str(), 0, 0640), 0);
  MDB_txn* txn;
  ASSERT_EQ(mdb_txn_begin(env, nullptr, 0, &txn), 0);
  MDB_dbi main;
  ASSERT_EQ(mdb_dbi_open(txn, nullptr, 0, &main), 0);
  MDB_val k{3, const_cast<char*>("foo")}, v{3, const_cast<char*>("bar")};
  ASSERT_EQ(mdb_put(txn, main, &k, &v, 0), 0);
  ASSERT_EQ(mdb_txn_commit(txn), 0);
  mdb_env_close(env);
  auto r = Index::open(Options{.dir = tmp.path()});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().rule, kRuleSchema);
  EXPECT_THAT(r.error().message, HasSubstr("not a dedupd index"));
}

}  // namespace
}  // namespace dedupd::index::gen
