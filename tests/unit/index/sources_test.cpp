// Sources: which files were rejected, remembered until they change.
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

using ::testing::IsEmpty;

TEST_P(IndexTest, RejectedFilesAreRememberedUntilTheyChange) {
  RejectInfo r{.path = "/cache/bad.mdb",
               .size = 100,
               .mtime_ns = 5,
               .content_hash = hash_of_seed(9),
               .rule = "header.magic",
               .offset = 0,
               .message = "not a shard",
               .recorded_at = 42};
  ASSERT_TRUE(idx->record_rejected(r));
  EXPECT_TRUE(*idx->is_known_rejected("/cache/bad.mdb", 100, 5));
  EXPECT_FALSE(*idx->is_known_rejected("/cache/bad.mdb", 101, 5));
  EXPECT_FALSE(*idx->is_known_rejected("/cache/bad.mdb", 100, 6));
  EXPECT_FALSE(*idx->is_known_rejected("/cache/other.mdb", 100, 5));
  auto list = idx->rejected();
  ASSERT_TRUE(list);
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ(list->front().rule, "header.magic");
  EXPECT_EQ(list->front().message, "not a shard");
  EXPECT_EQ(list->front().content_hash, hash_of_seed(9));
  EXPECT_EQ(list->front().recorded_at, 42u);
  EXPECT_EQ(stats().rejected, 1u);
  // Recording it again (rescan) does not count twice.
  ASSERT_TRUE(idx->record_rejected(r));
  EXPECT_EQ(stats().rejected, 1u);
  EXPECT_THAT(problems(), IsEmpty());

  // The file was replaced by a valid shard.
  auto x = gen_xorb(70, 2);
  auto s = own(build_shard({.xorbs = {&x}}));
  ingest(s, "/cache/bad.mdb");
  EXPECT_FALSE(*idx->is_known_rejected("/cache/bad.mdb", s.bytes.size(), 1));
  EXPECT_THAT(*idx->rejected(), IsEmpty());
  EXPECT_EQ(stats().rejected, 0u);

  ASSERT_TRUE(idx->record_rejected(RejectInfo{.path = "/gone.mdb", .rule = "x"}));
  ASSERT_TRUE(idx->forget_source("/gone.mdb"));
  EXPECT_FALSE(idx->source("/gone.mdb")->has_value());
  EXPECT_EQ(stats().rejected, 0u);
  EXPECT_THAT(problems(), IsEmpty());
  EXPECT_FALSE(idx->record_rejected(RejectInfo{}));
}

}  // namespace
}  // namespace dedupd::index::gen
