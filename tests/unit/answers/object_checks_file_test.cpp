// The digests of checked download objects kept in the state dir
// (daemon/answers/object_checks_file.hpp): read back as written, the newest
// line of a key winning, lines that do not read skipped, bounded; and a
// DownloadObjects made after a restart comparing a cache file with the
// digest an earlier run kept.
#include "daemon/answers/object_checks_file.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "daemon/answers/download_objects.hpp"
#include "serialized_xorbs.hpp"
#include "tests/support/temp_dir.hpp"

namespace dedupd::daemon::answers::download_testing {
namespace object_checks_file_test {

shard::Hash hash_of(char c) { return *shard::Hash::parse(std::string(64, c)); }

std::string key_of(char c, int start) {
  return "xet1:" + std::string(64, c) + ":" + std::to_string(start) + "-" + std::to_string(start + 99);
}

TEST(XetObjectChecksFile, DigestsAreReadBackAsWrittenTheNewestOfAKeyWinning) {
  tests::TempDir dir{"xet-checks"};
  ObjectChecksFile f(std::filesystem::path(dir.path()) / "checks", 10);
  auto none = f.load();
  ASSERT_TRUE(none) << none.error().to_string();
  EXPECT_TRUE(none->digests.empty());
  ASSERT_TRUE(f.append(key_of('a', 0), hash_of('1')));
  ASSERT_TRUE(f.append(key_of('b', 0), hash_of('2')));
  ASSERT_TRUE(f.append(key_of('a', 0), hash_of('3')));
  auto loaded = f.load();
  ASSERT_TRUE(loaded) << loaded.error().to_string();
  EXPECT_EQ(loaded->lines, 3u);
  EXPECT_EQ(loaded->skipped, 0u);
  ASSERT_EQ(loaded->digests.size(), 2u);
  EXPECT_EQ(loaded->digests.at(key_of('a', 0)), hash_of('3'));
  EXPECT_EQ(loaded->digests.at(key_of('b', 0)), hash_of('2'));
  EXPECT_EQ(std::filesystem::status(f.path()).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  // Rewritten: the same digests, one line each.
  ASSERT_TRUE(f.rewrite(loaded->digests));
  auto again = f.load();
  ASSERT_TRUE(again);
  EXPECT_EQ(again->lines, 2u);
  EXPECT_EQ(again->digests, loaded->digests);
}

TEST(XetObjectChecksFile, LinesThatDoNotReadAreSkippedAndCountedNeverTaken) {
  tests::TempDir dir{"xet-checks"};
  ObjectChecksFile f(std::filesystem::path(dir.path()) / "checks", 10);
  ASSERT_TRUE(f.append(key_of('a', 0), hash_of('1')));
  {
    std::ofstream out(f.path(), std::ios::app);
    out << "not a line\n";
    out << hash_of('2').to_string() << " xet1:" << std::string(63, 'b') << ":0-99\n";  // a short xorb
    out << hash_of('2').to_string() << " " << key_of('c', 0) << "x\n";                 // not digits
    out << hash_of('2').to_string() << "  " << key_of('d', 0) << "\n";                 // two spaces
    out << hash_of('4').to_string() << " " << key_of('e', 0);                          // torn: no newline
  }
  auto loaded = f.load();
  ASSERT_TRUE(loaded) << loaded.error().to_string();
  EXPECT_EQ(loaded->lines, 6u);
  EXPECT_EQ(loaded->skipped, 5u);
  ASSERT_EQ(loaded->digests.size(), 1u);
  EXPECT_EQ(loaded->digests.begin()->first, key_of('a', 0));
  // A line appended after the torn one is read (the torn one stays skipped).
  ASSERT_TRUE(f.append(key_of('f', 0), hash_of('5')));
  loaded = f.load();
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->digests.count(key_of('e', 0)) + loaded->digests.count(key_of('f', 0)), 0u)
      << "the torn line and the next one are one line";
}

TEST(XetObjectChecksFile, AtMostKeepObjectsTheNewest) {
  tests::TempDir dir{"xet-checks"};
  ObjectChecksFile f(std::filesystem::path(dir.path()) / "checks", 3);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(f.append(key_of('a', i * 100), hash_of('1')));
  auto loaded = f.load();
  ASSERT_TRUE(loaded);
  ASSERT_EQ(loaded->digests.size(), 3u);
  for (int i = 2; i < 5; ++i) EXPECT_EQ(loaded->digests.count(key_of('a', i * 100)), 1u) << i;
}

TEST(XetObjectChecksFile, AnUnreadableFileIsAnErrorNamingIt) {
  tests::TempDir dir{"xet-checks"};
  std::filesystem::create_directory(std::filesystem::path(dir.path()) / "checks");
  ObjectChecksFile f(std::filesystem::path(dir.path()) / "checks", 3);
  auto appended = f.append(key_of('a', 0), hash_of('1'));
  ASSERT_FALSE(appended);
  EXPECT_NE(appended.error().message.find("checks"), std::string::npos) << appended.error().message;
}

TEST(XetObjectChecksFile, AfterARestartAFileOfAXorbTheIndexLacksIsComparedWithTheKeptDigest) {
  // Chunk 0 is stored uncompressed: a flipped bit of its data passes the
  // structure, and the index does not hold the xorb here.
  tests::TempDir dir{"xet-checks"}, cache{"xet-cache"};
  Xorb x;
  const std::string xorb = x.hash.to_string();
  const ObjectSpan whole{0, x.bytes.size() - 1};
  const std::string key = object_cache_key(xorb, whole.start, whole.end);
  const auto file = object_cache_file(cache.path(), key);
  auto expected = [&] {
    auto e = x.expect(0, 4);
    e.first_chunk = e.end_chunk = 0;  // as a grant knows it
    return e;
  };
  {
    DownloadObjects first(10, ObjectChecksFile(std::filesystem::path(dir.path()) / "checks", 40));
    ASSERT_TRUE(first.load_checks());
    auto checked = check(x.bytes, x.expect(0, 4));
    ASSERT_TRUE(checked);
    first.add(xorb, whole, *checked);  // the fill
  }
  Bytes scribbled = x.bytes;
  scribbled[8 + 100] ^= 0x01;
  write_cache_file(file, key, scribbled);
  DownloadObjects without(10);  // no digests kept: the structure passes
  EXPECT_EQ(without.check_file(xorb, whole, cache.path(), expected), CacheFile::intact);
  DownloadObjects restarted(10, ObjectChecksFile(std::filesystem::path(dir.path()) / "checks", 40));
  auto loaded = restarted.load_checks();
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->digests.size(), 1u);
  EXPECT_EQ(restarted.check_file(xorb, whole, cache.path(), expected), CacheFile::damaged);
  EXPECT_FALSE(std::filesystem::exists(file));
  // The right bytes pass against the same digest.
  write_cache_file(file, key, x.bytes);
  DownloadObjects again(10, ObjectChecksFile(std::filesystem::path(dir.path()) / "checks", 40));
  ASSERT_TRUE(again.load_checks());
  EXPECT_EQ(again.check_file(xorb, whole, cache.path(), expected), CacheFile::intact);
}

}  // namespace object_checks_file_test
}  // namespace dedupd::daemon::answers::download_testing
