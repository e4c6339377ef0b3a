// The invariant checker (index/invariants.cpp) finds what it is for: every
// other test asks it for "no problem", so here each table is damaged with
// plain LMDB calls behind the index's back and the checker must name the
// damage. A checker that found nothing would pass everywhere else.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <lmdb.h>

#include <string>
#include <vector>

#include "tests/unit/index/support.hpp"

namespace dedupd::index::gen {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class InvariantsTest : public IndexFixture {
 protected:
  // A raw shard with files (verification and sha256) and a keyed shard
  // that expires: every table the checker reads has items.
  void SetUp() override {
    IndexFixture::SetUp();
    a = gen_xorb(1, 20);
    b = gen_xorb(2, 8);
    keyed = gen_xorb(3, 5);
    ingest(own(build_shard(
               {.xorbs = {&a, &b}, .files = {gen_file(1, a, 0, 20, true, true), gen_file(2, b, 0, 8, true, true)}})),
           "/raw.mdb");
    ingest(own(build_shard({.xorbs = {&keyed}, .key = hash_of_seed(77), .expiry = 2100000000})), "/keyed.mdb");
    ASSERT_THAT(problems(), IsEmpty());
  }

  // Closes the index, lets `damage` change the tables in one committed
  // LMDB transaction, opens the index again.
  template <class F>
  void behind_its_back(F&& damage) {
    idx.reset();
    {
      RawIndex raw(tmp / "idx", /*write=*/true);
      damage(raw);
      ASSERT_EQ(raw.commit(), 0);
    }
    reopen();
  }

  // Deletes the first item of `table` (one duplicate where it has several).
  void delete_first(const char* table) {
    behind_its_back([&](RawIndex& raw) {
      auto dbi = raw.table(table);
      ASSERT_TRUE(dbi) << table;
      MDB_cursor* c = nullptr;
      ASSERT_EQ(mdb_cursor_open(raw.txn(), *dbi, &c), 0);
      MDB_val k, v;
      ASSERT_EQ(mdb_cursor_get(c, &k, &v, MDB_FIRST), 0) << table << " is empty";
      ASSERT_EQ(mdb_cursor_del(c, 0), 0);
      mdb_cursor_close(c);
    });
  }

  // Puts one item into `table` as it is, whatever it means.
  void put(const char* table, std::vector<std::uint8_t> key, std::vector<std::uint8_t> value) {
    behind_its_back([&](RawIndex& raw) {
      auto dbi = raw.table(table);
      ASSERT_TRUE(dbi) << table;
      MDB_val k{key.size(), key.data()}, v{value.size(), value.data()};
      ASSERT_EQ(mdb_put(raw.txn(), *dbi, &k, &v, 0), 0);
    });
  }

  GenXorb a, b, keyed;
};

TEST_F(InvariantsTest, ACleanIndexHasNoProblemAndKeepsNone) {
  reopen();
  EXPECT_THAT(problems(), IsEmpty());
}

TEST_F(InvariantsTest, AShardRecordGoneLeavesItsRefsWithoutOwner) {
  delete_first("shards");
  EXPECT_THAT(problems(), Contains(HasSubstr("without a shard record")));
}

TEST_F(InvariantsTest, ALiveShardWithoutRefsIsHalfIngested) {
  delete_first("shard_refs");
  EXPECT_THAT(problems(), Contains(HasSubstr("has no shard_refs (half ingested?)")));
}

TEST_F(InvariantsTest, AXorbsRefcountMustBeTheShardsListingIt) {
  delete_first("xorb_shards");
  EXPECT_THAT(problems(), Contains(AllOf(HasSubstr("xorb id "), HasSubstr("but has no refcount entries"))));
}

TEST_F(InvariantsTest, AXorbRecordGoneIsNamedWhereverItsIdIsUsed) {
  delete_first("xorbs");
  auto found = problems();
  EXPECT_THAT(found, Contains(HasSubstr("xorb_ids names missing xorb id")));
  EXPECT_THAT(found, Contains(HasSubstr("which has no record")));
  EXPECT_THAT(found, Contains(HasSubstr("orphan chunk entry: xorb id")));
}

TEST_F(InvariantsTest, AXorbIdWithoutItsHashIsMissingFromXorbIds) {
  delete_first("xorb_ids");
  EXPECT_THAT(problems(), Contains(HasSubstr("is missing from xorb_ids")));
}

// Entries are written to the recent table and merged into the main one:
// one gone from either is missed.
TEST_F(InvariantsTest, AChunkEntryGoneIsCountedTwice) {
  delete_first("chunks_recent");
  auto found = problems();
  EXPECT_THAT(found, Contains(AllOf(HasSubstr(" chunks but "), HasSubstr("xorb id "))));
  EXPECT_THAT(found, Contains(HasSubstr("chunk table holds ")));
}

TEST_F(InvariantsTest, AMergedChunkEntryGoneIsCountedTwice) {
  ASSERT_TRUE(idx->merge_recent());
  ASSERT_THAT(problems(), IsEmpty());
  delete_first("chunks");
  auto found = problems();
  EXPECT_THAT(found, Contains(AllOf(HasSubstr(" chunks but "), HasSubstr("xorb id "))));
  EXPECT_THAT(found, Contains(HasSubstr("chunk table holds ")));
}

TEST_F(InvariantsTest, AFileRecordGoneIsCountedAgainstTheLiveShards) {
  delete_first("files");
  EXPECT_THAT(problems(), Contains(HasSubstr("files table holds 1 files, live shards list 2")));
}

TEST_F(InvariantsTest, AFileShardGoneBreaksTheFileRefcounts) {
  delete_first("file_shards");
  EXPECT_THAT(problems(), Contains(HasSubstr("file refcounts do not match the live shards listing the files")));
}

TEST_F(InvariantsTest, TheSha256TableIsTheFilesExtensions) {
  delete_first("sha256");
  EXPECT_THAT(problems(), Contains(HasSubstr("sha256 table does not match")));
}

TEST_F(InvariantsTest, TheKeysAndExpiryTablesFollowTheLiveShards) {
  delete_first("keys");
  EXPECT_THAT(problems(), Contains(HasSubstr("keys table does not match the live keyed shards")));
  delete_first("expiry");
  EXPECT_THAT(problems(), Contains(HasSubstr("expiry table does not match the live expiring shards")));
}

TEST_F(InvariantsTest, ItemsOfTheWrongSizeAreNamedNotRead) {
  put("shards", {1, 2, 3, 4, 5}, {0});
  EXPECT_THAT(problems(), Contains("shards: key of 5 bytes"));
}

TEST_F(InvariantsTest, ARecordThatDoesNotDecodeIsNamed) {
  const Hash h = hash_of_seed(4242);
  put("shards", std::vector<std::uint8_t>(h.bytes.begin(), h.bytes.end()), {0xFF});
  EXPECT_THAT(problems(), Contains("shard " + h.to_string() + ": record does not decode"));
}

TEST_F(InvariantsTest, AXorbIdUnderAnotherHashIsNamed) {
  // Moves the first xorb id to a hash of no xorb.
  std::vector<std::uint8_t> id;
  behind_its_back([&](RawIndex& raw) {
    auto dbi = raw.table("xorb_ids");
    ASSERT_TRUE(dbi);
    MDB_cursor* c = nullptr;
    ASSERT_EQ(mdb_cursor_open(raw.txn(), *dbi, &c), 0);
    MDB_val key, v;
    ASSERT_EQ(mdb_cursor_get(c, &key, &v, MDB_FIRST), 0);
    id.assign(static_cast<const std::uint8_t*>(v.mv_data), static_cast<const std::uint8_t*>(v.mv_data) + v.mv_size);
    ASSERT_EQ(mdb_cursor_del(c, 0), 0);
    mdb_cursor_close(c);
    const Hash other = hash_of_seed(999);
    MDB_val ok{32, const_cast<std::uint8_t*>(other.bytes.data())}, ov{id.size(), id.data()};
    ASSERT_EQ(mdb_put(raw.txn(), *dbi, &ok, &ov, 0), 0);
  });
  EXPECT_THAT(problems(), Contains(HasSubstr("xorb_ids: id ")));
}

}  // namespace
}  // namespace dedupd::index::gen
