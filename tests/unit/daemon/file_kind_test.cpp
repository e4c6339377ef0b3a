#include "daemon/watch/file_kind.hpp"

#include <gtest/gtest.h>

namespace dedupd::daemon::watch {
namespace {

TEST(FileKind, TakesShardsAndBundles) {
  EXPECT_EQ(file_kind("9502eec19d4b0c9f7b389228fa801f68ecdf15d69ccd1da2f9ddbd0219898335.mdb"), FileKind::shard);
  EXPECT_EQ(file_kind("x.mdb"), FileKind::shard);
  EXPECT_EQ(file_kind("bundle.caf"), FileKind::bundle);
}

TEST(FileKind, IgnoresTemporaryHiddenAndOtherFiles) {
  EXPECT_EQ(file_kind(".0a1b2c3d-uuid.mdb_temp"), FileKind::ignored);
  EXPECT_EQ(file_kind("x.mdb_temp"), FileKind::ignored);
  EXPECT_EQ(file_kind(".hidden.mdb"), FileKind::ignored);
  EXPECT_EQ(file_kind(".mdb"), FileKind::ignored);
  EXPECT_EQ(file_kind("mdb"), FileKind::ignored);
  EXPECT_EQ(file_kind("x.mdb.bak"), FileKind::ignored);
  EXPECT_EQ(file_kind("x.MDB"), FileKind::ignored);
  EXPECT_EQ(file_kind("x.json"), FileKind::ignored);
  EXPECT_EQ(file_kind(""), FileKind::ignored);
  EXPECT_EQ(file_kind("."), FileKind::ignored);
  EXPECT_EQ(file_kind(".."), FileKind::ignored);
}

}  // namespace
}  // namespace dedupd::daemon::watch
