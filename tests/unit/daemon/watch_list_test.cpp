// The `watch` key (daemon/config/watch_list): entries as a path or a
// mapping, their rules, and one steward per managed cache.
#include "daemon/config/watch_list.hpp"

#include <gtest/gtest.h>

#include <string>

#include "tests/unit/daemon/config_load.hpp"
#include "tests/unit/daemon/value_parse.hpp"

namespace dedupd::daemon::config {
namespace {

TEST(Config, ManageIsOffUnlessAWatchEntryAsksForIt) {
  Config c = load_ok(
      "watch:\n  - /srv/shards\n  - path: /home/ci/.cache/huggingface/xet\n    manage: xet-cache\n"
      "  - {path: /srv/other, manage: none}\n");
  ASSERT_EQ(c.watch.size(), 3u);
  EXPECT_EQ(c.watch[0].manage, Manage::none);
  EXPECT_EQ(c.watch[1].manage, Manage::xet_cache);
  EXPECT_TRUE(c.watch[1].recursive);
  EXPECT_EQ(c.watch[2].manage, Manage::none);
}

TEST(ConfigErrors, BadManage) {
  expect_one_error("watch:\n  - path: /a\n    manage: xet_cache\n", "watch[0].manage", 3, "xet-cache or none");
  expect_one_error("watch:\n  - path: /a\n    manage: [xet-cache]\n", "watch[0].manage", 3, "got a list");
  expect_one_error("watch:\n  - path: /a\n    recursive: false\n    manage: xet-cache\n", "watch[0].recursive", 2,
                   "must be watched recursively");
}

// Issue 30: two entries over one cache made two stewards, and one deleted
// originals under a running client; the old loader accepted both.
TEST(ConfigErrors, DuplicateOrNestedManagedCachesNameBothLines) {
  expect_one_error("watch:\n  - path: /c\n    manage: xet-cache\n  - path: /c/\n    manage: xet-cache\n", "watch[1]", 4,
                   "same directory as the managed cache /c on line 2");
  expect_one_error("watch:\n  - path: /c/hub\n    manage: xet-cache\n  - path: /c\n    manage: xet-cache\n", "watch[1]",
                   4, "overlaps the managed cache /c/hub on line 2");
  // Siblings with a common name prefix are not nested; an unmanaged watch
  // of the same tree is only a watch.
  load_ok("watch:\n  - path: /c\n    manage: xet-cache\n  - path: /c2\n    manage: xet-cache\n  - /c\n");
}

TEST(WatchList, AnEmptyValueWatchesNothingAndAScalarIsNoList) {
  ParseValue p;
  auto none = p(WatchListValue{}, "watch:");
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
  EXPECT_FALSE(p(WatchListValue{}, "watch: /srv/shards"));
  ASSERT_EQ(p.reader.errors.size(), 1u);
  EXPECT_EQ(p.reader.errors[0].key, "watch");
  EXPECT_EQ(p.reader.errors[0].message, "expected a list of directories");
}

TEST(WatchList, BothFormsReadIntoTheSameEntries) {
  ParseValue p;
  auto got = p(WatchListValue{},
               "watch:\n  - in\n  - {path: /c, manage: xet-cache, cas: 'https://CAS.example'}\n"
               "  - path: /flat\n    recursive: false\n");
  ASSERT_TRUE(got);
  EXPECT_TRUE(p.reader.errors.empty());
  ASSERT_EQ(got->size(), 3u);
  EXPECT_EQ((*got)[0], (WatchDir{"/etc/dedupd/in", true, Manage::none, ""}));
  EXPECT_EQ((*got)[1], (WatchDir{"/c", true, Manage::xet_cache, "https://cas.example"}));
  EXPECT_EQ((*got)[2], (WatchDir{"/flat", false, Manage::none, ""}));
  EXPECT_EQ(WatchListValue{}.show(*got), "/etc/dedupd/in, /c, /flat");
  EXPECT_EQ(WatchListValue{}.show({}), "");
}

TEST(WatchList, AnEntrysMistakesNameTheEntryAndLeaveItOut) {
  ParseValue p;
  auto got = p(WatchListValue{}, "watch:\n  - /a\n  - {recursive: true}\n  - {path: /b, depth: 2}\n");
  ASSERT_TRUE(got);
  ASSERT_EQ(p.reader.errors.size(), 2u);
  EXPECT_EQ(p.reader.errors[0].key, "watch[1]");
  EXPECT_EQ(p.reader.errors[0].line, 3);
  EXPECT_EQ(p.reader.errors[0].message, "a watch entry needs a path");
  EXPECT_EQ(p.reader.errors[1].key, "watch[2].depth");
  EXPECT_EQ(p.reader.errors[1].line, 4);
  EXPECT_EQ(p.reader.errors[1].message, "unknown key (known here: path, recursive, manage, cas)");
  // The entry without a path is not watched; the one with a stray key is.
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0].path, "/a");
  EXPECT_EQ((*got)[1].path, "/b");
}

TEST(WatchList, AnUnmanagedWatchOverAManagedCacheIsOnlyAWatch) {
  ParseValue p;
  auto got = p(WatchListValue{}, "watch:\n  - {path: /c/hub, manage: xet-cache}\n  - /c\n  - /c/hub\n");
  ASSERT_TRUE(got);
  EXPECT_TRUE(p.reader.errors.empty());
  EXPECT_EQ(got->size(), 3u);
}

}  // namespace
}  // namespace dedupd::daemon::config
