// One shard of a client cache as the planners see it (xetcache/shards): its
// kind, what it costs and adds to a merge, and its bytes read whole without
// a map, never through a link or from a FIFO.
#include "xetcache/shards.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "cache_support.hpp"
#include "test_support.hpp"
#include "tests/support/temp_dir.hpp"

namespace dedupd::xetcache {
namespace {

using testing::shard_bytes;

TEST(Scan, ServerRepliesWithoutTablesAddTheirTablesToAMerge) {
  auto x = shard::testing::make_xorb(4, 7);
  shard::ShardWriter w;
  w.add_xorb(x.record);
  testing::FooterSpec spec;
  spec.tables = shard::LookupTables::none_server_style;
  auto bytes = shard_bytes(w, spec);
  ShardDesc d = describe(testing::parse_or_fail(bytes), "reply");
  EXPECT_EQ(d.kind, ShardKind::plain);
  EXPECT_EQ(d.merged_bytes, bytes.size() - 344 + 12 + 7 * 16);
}

TEST(Shards, TheKindIsTheKeyOrTheFilesVerification) {
  auto x = shard::testing::make_xorb(5, 4);
  shard::ShardWriter verified, plain, keyed, bare;
  for (auto* w : {&verified, &plain, &keyed, &bare}) w->add_xorb(x.record);
  verified.add_file(shard::testing::make_file(6, {{&x, 0, 4}}, true, false));
  plain.add_file(shard::testing::make_file(6, {{&x, 0, 4}}, false, true));
  keyed.add_file(shard::testing::make_file(6, {{&x, 0, 4}}, true, false));
  testing::FooterSpec with_key;
  with_key.key = shard::testing::seeded_hash(7);
  EXPECT_EQ(kind_of(testing::parse_or_fail(testing::shard_bytes(verified, {}))), ShardKind::verified);
  EXPECT_EQ(kind_of(testing::parse_or_fail(testing::shard_bytes(plain, {}))), ShardKind::plain);
  EXPECT_EQ(kind_of(testing::parse_or_fail(testing::shard_bytes(keyed, with_key))), ShardKind::keyed);
  EXPECT_EQ(kind_of(testing::parse_or_fail(testing::shard_bytes(bare, {}))), ShardKind::plain) << "no files";
}

TEST(Shards, AnUploadShardHasNoCreationAndNeverExpires) {
  auto x = shard::testing::make_xorb(8, 3);
  shard::ShardWriter w;
  w.add_xorb(x.record);
  shard::WriteOptions o;
  o.with_footer = false;
  const auto bytes = w.write(o);
  const ShardDesc d = describe(testing::parse_or_fail(bytes), "upload.mdb");
  EXPECT_EQ(d.path, "upload.mdb");
  EXPECT_EQ(d.size, bytes.size());
  EXPECT_EQ(d.chunk_entries, 3u);
  EXPECT_EQ(d.creation, 0u);
  EXPECT_EQ(d.expiry, shard::kNoExpiry);
  EXPECT_TRUE(d.key.is_zero());
  EXPECT_EQ(d.last_used, 0u) << "describe() leaves the times to its caller";
}

// Issue 30, finding 6: fd0e0e3 mapped the files (a truncation under the map
// is a SIGBUS) and followed symbolic links.
TEST(ReadRegularFile, RefusesLinksAndFifosAndReadsIntoMemory) {
  tests::TempDir dir;
  tests::write_file(dir / "real", "shard bytes");
  auto bytes = read_regular_file(dir / "real");
  ASSERT_TRUE(bytes) << bytes.error().to_string();
  EXPECT_EQ(std::string(bytes->begin(), bytes->end()), "shard bytes");
  std::filesystem::create_symlink(dir / "real", dir / "link");
  auto link = read_regular_file(dir / "link");
  ASSERT_FALSE(link);
  EXPECT_EQ(link.error().rule, "file.open");
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  auto fifo = read_regular_file(dir / "fifo");  // must not hang waiting for a writer
  ASSERT_FALSE(fifo);
  EXPECT_EQ(fifo.error().rule, "xetcache.not_regular");
}

TEST(ReadRegularFile, WhatIsNotThereOrNotAFileIsNamed) {
  tests::TempDir dir;
  auto missing = read_regular_file(dir / "missing");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().rule, "file.open");
  EXPECT_EQ(missing.error().message, dir / "missing" + ": No such file or directory");
  auto directory = read_regular_file(dir.path());
  ASSERT_FALSE(directory);
  EXPECT_EQ(directory.error().rule, "xetcache.not_regular");
  EXPECT_EQ(directory.error().message, dir.path() + ": not a regular file");
  tests::write_file(dir / "empty", "");
  auto empty = read_regular_file(dir / "empty");
  ASSERT_TRUE(empty) << empty.error().to_string();
  EXPECT_TRUE(empty->empty());
}

}  // namespace
}  // namespace dedupd::xetcache
