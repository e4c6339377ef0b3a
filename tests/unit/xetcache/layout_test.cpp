// The client's cache layout on a real directory tree, and what a scan of it
// reports.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "cache_support.hpp"
#include "test_support.hpp"
#include "tests/support/temp_dir.hpp"
#include "xetcache/layout.hpp"
#include "xetcache/shards.hpp"

namespace dedupd::xetcache {
namespace {

namespace fs = std::filesystem;
using testing::put_shard;
using testing::shard_bytes;

const std::string kHexName = std::string(64, 'a') + ".mdb";

TEST(Layout, LoadableNamesAreTheClientsPattern) {
  EXPECT_TRUE(is_loadable_shard_name(kHexName));
  EXPECT_TRUE(is_loadable_shard_name(std::string(32, 'A') + std::string(32, '0') + ".mdb"));
  EXPECT_FALSE(is_loadable_shard_name(std::string(63, 'a') + ".mdb"));
  EXPECT_FALSE(is_loadable_shard_name(std::string(65, 'a') + ".mdb"));
  EXPECT_FALSE(is_loadable_shard_name(std::string(63, 'a') + "g.mdb"));
  EXPECT_FALSE(is_loadable_shard_name(std::string(64, 'a') + ".MDB"));
  EXPECT_FALSE(is_loadable_shard_name(std::string(64, 'a') + ".mdb_temp"));
  EXPECT_FALSE(is_loadable_shard_name(".0b6a4f1e-52c4-4f57-9d0a-2b1c3d4e5f60.mdb_temp"));
  EXPECT_FALSE(is_loadable_shard_name("." + kHexName));
}

TEST(Layout, FindsEndpointsTheirShardsAndSessions) {
  tests::TempDir root("xetcache-layout");
  const std::string ep = root / "https___cas_serv-QmFzZTY0SGFzaDEyMzQ";
  fs::create_directories(ep + "/shard-cache");
  fs::create_directories(ep + "/staging/shard-session/.tmpAbC123");
  fs::create_directories(ep + "/staging/shard-session/xorb_metadata");
  fs::create_directories(root / "memory/staging");          // an endpoint with staging only
  fs::create_directories(root / "chunk-only/chunk-cache");  // not an endpoint
  tests::write_file(root / "stray-file", "x");

  auto s = shard_bytes(shard::testing::small_shard().writer, {});
  std::string a = put_shard(ep + "/shard-cache", s);
  tests::write_file(ep + "/shard-cache/" + std::string(64, 'B') + ".mdb", "not parsed here");
  tests::write_file(ep + "/shard-cache/.0b6a4f1e-52c4-4f57-9d0a-2b1c3d4e5f60.mdb_temp", "half");
  tests::write_file(ep + "/shard-cache/." + kHexName, "hidden");
  tests::write_file(ep + "/shard-cache/README", "no");
  fs::create_directory(ep + "/shard-cache/" + std::string(64, 'c') + ".mdb");  // a directory
  ASSERT_EQ(::symlink(a.c_str(), (ep + "/shard-cache/" + std::string(64, 'd') + ".mdb").c_str()), 0);
  std::string in_session = put_shard(ep + "/staging/shard-session/.tmpAbC123", s);
  std::string resumable = put_shard(ep + "/staging/shard-session/xorb_metadata", s);

  auto found = discover(root.path());
  ASSERT_TRUE(found) << found.error().to_string();
  ASSERT_EQ(found->size(), 2u);
  const EndpointCache& c = (*found)[0];
  EXPECT_EQ(c.dir, ep);
  EXPECT_EQ(c.shard_cache, ep + "/shard-cache");
  ASSERT_EQ(c.shards.size(), 2u);  // names only: the 'B' file is not a shard, the client would try it too
  std::vector<std::string> paths{c.shards[0].path, c.shards[1].path};
  EXPECT_NE(std::find(paths.begin(), paths.end(), a), paths.end());
  EXPECT_NE(std::find(paths.begin(), paths.end(), ep + "/shard-cache/" + std::string(64, 'B') + ".mdb"), paths.end());
  for (const auto& f : c.shards) EXPECT_GT(f.size, 0u);
  ASSERT_EQ(c.sessions.size(), 1u);
  EXPECT_EQ(c.sessions[0].path, ep + "/staging/shard-session/.tmpAbC123");
  ASSERT_EQ(c.sessions[0].shards.size(), 1u);
  EXPECT_EQ(c.sessions[0].shards[0].path, in_session);
  ASSERT_TRUE(c.xorb_metadata);
  ASSERT_EQ(c.xorb_metadata->shards.size(), 1u);
  EXPECT_EQ(c.xorb_metadata->shards[0].path, resumable);

  const EndpointCache& m = (*found)[1];
  EXPECT_EQ(m.dir, root / "memory");
  EXPECT_TRUE(m.shard_cache.empty());
  EXPECT_TRUE(m.shards.empty());

  auto one = discover(ep);  // a root that is one endpoint's directory
  ASSERT_TRUE(one);
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].dir, ep);
  EXPECT_EQ((*one)[0].shards.size(), 2u);
}

TEST(Layout, MissingRootIsAnErrorNamingIt) {
  tests::TempDir root("xetcache-missing");
  auto found = discover(root / "nope");
  ASSERT_FALSE(found);
  EXPECT_EQ(found.error().rule, "xetcache.layout");
  EXPECT_NE(found.error().message.find("nope"), std::string::npos);
}

// Issue 30, finding 3: at fd0e0e3 one endpoint whose shard-cache/ (or a
// session dir) could not be read failed discover() for the whole root, so
// no other cache under it was looked after. A name too long to stat
// (ENAMETOOLONG) stands in for EACCES, which root, running the tests,
// would not get.
TEST(Layout, AnUnreadableEndpointIsItsProblemNotTheRoots) {
  tests::TempDir tmp("xetcache-unreadable");
  std::string root = tmp.path();
  while (root.size() < 3950) root += "/" + std::string(std::min<std::size_t>(200, 3950 - root.size() - 1), 'd');
  std::filesystem::create_directories(root);
  const std::string broken = root + "/" + std::string(100, 'a');  // its files' paths pass PATH_MAX
  std::filesystem::create_directories(broken + "/shard-cache");
  const int dir = ::open((broken + "/shard-cache").c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(dir, 0);
  const int file = ::openat(dir, (std::string(64, 'c') + ".mdb").c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(file, 0);
  ::close(file);
  ::close(dir);
  std::filesystem::create_directories(root + "/b/shard-cache");
  tests::write_file(root + "/b/shard-cache/" + std::string(64, 'b') + ".mdb", "x");

  auto found = discover(root);
  ASSERT_TRUE(found) << found.error().to_string();
  ASSERT_EQ(found->size(), 2u);
  const EndpointCache& a = (*found)[0];
  const EndpointCache& b = (*found)[1];
  EXPECT_EQ(a.dir, broken);
  ASSERT_EQ(a.problems.size(), 1u);
  EXPECT_EQ(a.problems[0].rule, "xetcache.layout");
  EXPECT_TRUE(b.problems.empty());
  EXPECT_EQ(b.shards.size(), 1u);
}

TEST(Scan, ReportsFilesBytesAndEntriesAndSetsAsideWhatDoesNotParse) {
  tests::TempDir dir("xetcache-scan");
  auto x1 = shard::testing::make_xorb(1, 12);
  auto x2 = shard::testing::make_xorb(2, 5);
  shard::ShardWriter w1, w2;
  w1.add_xorb(x1.record);
  w2.add_xorb(x2.record);
  w2.add_file(shard::testing::make_file(3, {{&x2, 0, 5}}, true, true));
  testing::FooterSpec keyed;
  keyed.key = shard::testing::seeded_hash(99);
  keyed.expiry = 1'800'000'000;
  keyed.creation = 1'700'000'123;
  auto b1 = shard_bytes(w1, keyed);
  auto b2 = shard_bytes(w2, {});
  std::string p1 = put_shard(dir.path(), b1);
  std::string p2 = put_shard(dir.path(), b2);
  tests::write_file(dir / (std::string(64, 'e') + ".mdb"), "garbage");

  auto files = list_shard_files(dir.path());
  ASSERT_TRUE(files);
  ASSERT_EQ(files->size(), 3u);
  CacheScan s = scan(*files);
  ASSERT_EQ(s.shards.size(), 2u);
  ASSERT_EQ(s.unreadable.size(), 1u);
  EXPECT_EQ(s.unreadable[0].path, dir / (std::string(64, 'e') + ".mdb"));
  EXPECT_EQ(s.unreadable[0].error.rule, "header.truncated");
  EXPECT_EQ(s.usage.files, 2u);
  EXPECT_EQ(s.usage.bytes, b1.size() + b2.size());
  EXPECT_EQ(s.usage.chunk_entries, 17u);

  for (const ShardDesc& d : s.shards) {
    if (d.path == p1) {
      EXPECT_EQ(d.kind, ShardKind::keyed);
      EXPECT_EQ(d.key, keyed.key);
      EXPECT_EQ(d.expiry, 1'800'000'000u);
      EXPECT_EQ(d.creation, 1'700'000'123u);
      EXPECT_EQ(d.chunk_entries, 12u);
    } else {
      EXPECT_EQ(d.path, p2);
      EXPECT_EQ(d.kind, ShardKind::verified);
      EXPECT_TRUE(d.key.is_zero());
      EXPECT_EQ(d.expiry, shard::kNoExpiry);
    }
    // Built with tables, a shard adds to a merge what it holds minus its
    // header, bookends and footer.
    EXPECT_EQ(d.merged_bytes, d.size - 344);
    EXPECT_GT(d.last_used, 0u);
  }
}

}  // namespace
}  // namespace dedupd::xetcache
