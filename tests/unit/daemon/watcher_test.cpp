// Real inotify in a temp dir: events are queued by the time the file
// operation returns, so each test reads them right after acting.
#include "daemon/watch/watcher.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "tests/support/temp_dir.hpp"

namespace dedupd::daemon::watch {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> names(const std::vector<Candidate>& cs, const fs::path& root) {
  std::vector<std::string> out;
  for (const auto& c : cs) out.push_back(c.path.lexically_relative(root).string());
  std::sort(out.begin(), out.end());
  return out;
}

class WatcherTest : public ::testing::Test {
 protected:
  void SetUp() override { watcher.set_roots({config::WatchDir{dir.path(), true}}); }
  std::vector<std::string> ready() { return names(watcher.read_events().ready, dir.path()); }

  tests::TempDir dir;
  Watcher watcher;
};

using Names = std::vector<std::string>;

TEST_F(WatcherTest, FileWrittenSlowlyIsTakenOnlyWhenClosed) {
  int fd = ::open((dir / "a.mdb").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "part one", 8), 8);
  EXPECT_EQ(ready(), Names{});
  ASSERT_EQ(::write(fd, "part two", 8), 8);
  EXPECT_EQ(ready(), Names{});
  ::close(fd);
  EXPECT_EQ(ready(), Names{"a.mdb"});
  EXPECT_EQ(ready(), Names{});
}

TEST_F(WatcherTest, TempFileRenamedIntoPlaceIsTakenOnce) {
  tests::write_file(dir / ".5f0c-uuid.mdb_temp", "shard bytes");
  EXPECT_EQ(ready(), Names{});
  fs::rename(dir / ".5f0c-uuid.mdb_temp", dir / "abc.mdb");
  EXPECT_EQ(ready(), Names{"abc.mdb"});
  EXPECT_EQ(ready(), Names{});
}

TEST_F(WatcherTest, FileMovedInFromOutsideIsTaken) {
  tests::TempDir outside;
  tests::write_file(outside / "b.mdb", "x");
  fs::rename(outside / "b.mdb", dir / "b.mdb");
  EXPECT_EQ(ready(), Names{"b.mdb"});
}

TEST_F(WatcherTest, IgnoresHiddenTemporaryAndForeignFiles) {
  tests::write_file(dir / ".hidden.mdb", "x");
  tests::write_file(dir / "x.mdb_temp", "x");
  tests::write_file(dir / "notes.txt", "x");
  tests::write_file(dir / "bundle.caf", "x");
  auto batch = watcher.read_events();
  ASSERT_EQ(batch.ready.size(), 1u);
  EXPECT_EQ(batch.ready[0].path.filename(), "bundle.caf");
  EXPECT_EQ(batch.ready[0].kind, FileKind::bundle);
}

TEST_F(WatcherTest, NewSubdirectoriesAreWatchedAndTheirEarlyFilesFound) {
  // Everything here happens before the watcher reads the mkdir event, so
  // only a scan of the new directories can find these files.
  fs::create_directories(dir / "hf/shard-cache");
  tests::write_file(dir / "hf/shard-cache/early.mdb", "x");
  EXPECT_EQ(ready(), (Names{"hf/shard-cache/early.mdb"}));
  // And later files in them arrive through their own watches.
  tests::write_file(dir / "hf/shard-cache/late.mdb", "x");
  fs::create_directories(dir / "hf/shard-cache/deeper");
  EXPECT_EQ(ready(), (Names{"hf/shard-cache/late.mdb"}));
  tests::write_file(dir / "hf/shard-cache/deeper/d.mdb", "x");
  EXPECT_EQ(ready(), (Names{"hf/shard-cache/deeper/d.mdb"}));
}

TEST_F(WatcherTest, DirectoryMovedInIsScanned) {
  tests::TempDir outside;
  fs::create_directories(outside / "tree/sub");
  tests::write_file(outside / "tree/sub/m.mdb", "x");
  fs::rename(outside / "tree", dir / "tree");
  EXPECT_EQ(ready(), (Names{"tree/sub/m.mdb"}));
  tests::write_file(dir / "tree/sub/n.mdb", "x");
  EXPECT_EQ(ready(), (Names{"tree/sub/n.mdb"}));
}

TEST_F(WatcherTest, DirectoryRenamedWithinTheTreeKeepsCorrectPaths) {
  fs::create_directories(dir / "old");
  (void)ready();
  fs::rename(dir / "old", dir / "new");
  (void)ready();
  tests::write_file(dir / "new/x.mdb", "x");
  EXPECT_EQ(ready(), (Names{"new/x.mdb"}));
}

TEST_F(WatcherTest, DirectoryMovedOutIsForgotten) {
  tests::TempDir outside;
  fs::create_directories(dir / "leaving");
  (void)ready();
  std::size_t before = watcher.watch_count();
  fs::rename(dir / "leaving", outside / "gone");
  (void)ready();
  EXPECT_EQ(watcher.watch_count(), before - 1);
  tests::write_file(outside / "gone/x.mdb", "x");
  EXPECT_EQ(ready(), Names{});
}

TEST_F(WatcherTest, RemovedTreeOfSeveralDirectoriesIsForgotten) {
  // The Xet client's session tree: each directory's IN_DELETE_SELF forgets
  // the subtree under a path held by the watch being erased (it once read
  // freed memory here and crashed dedupd).
  fs::create_directories(dir / "staging/shard-session/a/b");
  fs::create_directories(dir / "staging/shard-session/c");
  (void)ready();
  std::size_t before = watcher.watch_count();
  fs::remove_all(dir / "staging");
  EXPECT_EQ(ready(), Names{});
  EXPECT_EQ(watcher.watch_count(), before - 5);
  tests::write_file(dir / "after.mdb", "x");
  EXPECT_EQ(ready(), Names{"after.mdb"});
}

TEST_F(WatcherTest, DotDirectoriesAreNotEntered) {
  // The client's session directories (staging/shard-session/.tmpXXXXXX)
  // hold shards of uploads still in progress.
  fs::create_directories(dir / "staging/shard-session/.tmpAbC123");
  tests::write_file(dir / "staging/shard-session/.tmpAbC123/s.mdb", "x");
  tests::write_file(dir / "staging/shard-session/t.mdb", "x");
  EXPECT_EQ(ready(), (Names{"staging/shard-session/t.mdb"}));
  tests::write_file(dir / "staging/shard-session/.tmpAbC123/u.mdb", "x");
  EXPECT_EQ(ready(), Names{});
  EXPECT_EQ(names(watcher.scan(), dir.path()), (Names{"staging/shard-session/t.mdb"}));
}

TEST(Watcher, NonRecursiveRootIgnoresSubdirectories) {
  tests::TempDir dir;
  fs::create_directories(dir / "sub");
  Watcher w;
  w.set_roots({config::WatchDir{dir.path(), false}});
  tests::write_file(dir / "sub/s.mdb", "x");
  tests::write_file(dir / "top.mdb", "x");
  EXPECT_EQ(names(w.read_events().ready, dir.path()), Names{"top.mdb"});
  EXPECT_EQ(names(w.scan(), dir.path()), Names{"top.mdb"});
  EXPECT_TRUE(w.inside_roots(dir / "top.mdb"));
  EXPECT_FALSE(w.inside_roots(dir / "sub/s.mdb"));
}

TEST(Watcher, ScanFindsExistingFilesSortedAndWatchesThem) {
  tests::TempDir dir;
  fs::create_directories(dir / "a/b");
  tests::write_file(dir / "z.mdb", "x");
  tests::write_file(dir / "a/b/y.mdb", "x");
  tests::write_file(dir / "a/.tmp.mdb_temp", "x");
  Watcher w;
  w.set_roots({config::WatchDir{dir.path(), true}});
  EXPECT_EQ(names(w.scan(), dir.path()), (Names{"a/b/y.mdb", "z.mdb"}));
  tests::write_file(dir / "a/b/new.mdb", "x");
  EXPECT_EQ(names(w.read_events().ready, dir.path()), Names{"a/b/new.mdb"});
}

TEST(Watcher, MissingRootIsPickedUpByALaterScan) {
  tests::TempDir dir;
  Watcher w;
  w.set_roots({config::WatchDir{dir / "later", true}});
  EXPECT_TRUE(w.scan().empty());
  fs::create_directories(dir / "later");
  tests::write_file(dir / "later/x.mdb", "x");
  EXPECT_EQ(names(w.scan(), dir / "later"), Names{"x.mdb"});
  tests::write_file(dir / "later/y.mdb", "x");
  EXPECT_EQ(names(w.read_events().ready, dir / "later"), Names{"y.mdb"});
}

TEST(Watcher, ChangingRootsStopsWatchingTheOldOnes) {
  tests::TempDir a, b;
  Watcher w;
  w.set_roots({config::WatchDir{a.path(), true}});
  w.set_roots({config::WatchDir{b.path(), true}});
  tests::write_file(a / "old.mdb", "x");
  tests::write_file(b / "new.mdb", "x");
  auto batch = w.read_events();
  ASSERT_EQ(batch.ready.size(), 1u);
  EXPECT_EQ(batch.ready[0].path, b / "new.mdb");
}

TEST(Watcher, SymlinkedDirectoriesAreNotFollowed) {
  tests::TempDir dir, outside;
  tests::write_file(outside / "o.mdb", "x");
  fs::create_directory_symlink(outside.path(), dir / "link");
  Watcher w;
  w.set_roots({config::WatchDir{dir.path(), true}});
  EXPECT_TRUE(w.scan().empty());
}

TEST(Watcher, SymlinkedFilesAreNotTaken) {
  tests::TempDir dir, outside;
  tests::write_file(outside / "o.mdb", "x");
  fs::create_symlink(outside / "o.mdb", dir / "before.mdb");
  Watcher w;
  w.set_roots({config::WatchDir{dir.path(), true}});
  EXPECT_TRUE(w.scan().empty());
  fs::create_symlink(outside / "o.mdb", dir / "after.mdb");
  fs::create_symlink(outside / "o.mdb", outside / "moved.mdb");
  fs::rename(outside / "moved.mdb", dir / "moved.mdb");
  tests::write_file(dir / "real.mdb", "x");  // the events after the links have come
  auto batch = w.read_events();
  ASSERT_EQ(batch.ready.size(), 1u);
  EXPECT_EQ(batch.ready[0].path, dir / "real.mdb");
}

TEST(Watcher, InsideRootsIsLexicalAndStrict) {
  tests::TempDir dir;
  Watcher w;
  w.set_roots({config::WatchDir{dir.path(), true}});
  EXPECT_TRUE(w.inside_roots(dir / "a/b.mdb"));
  EXPECT_FALSE(w.inside_roots(dir / "../elsewhere.mdb"));
  EXPECT_FALSE(w.inside_roots(dir / "a/../../x.mdb"));
  EXPECT_FALSE(w.inside_roots(dir.path()));
  EXPECT_FALSE(w.inside_roots("/etc/passwd"));
}

TEST(Watcher, QueueOverflowIsReported) {
  std::ifstream limit_file("/proc/sys/fs/inotify/max_queued_events");
  long limit = 0;
  if (!(limit_file >> limit) || limit > 100000) GTEST_SKIP() << "inotify queue too large to fill";
  tests::TempDir dir;
  Watcher w;
  w.set_roots({config::WatchDir{dir.path(), true}});
  tests::write_file(dir / "a.mdb", "");
  tests::write_file(dir / "b.mdb", "");
  // Each open for writing queues an IN_CLOSE_WRITE; alternating names keeps
  // the kernel from merging them with the previous one.
  for (long i = 0; i <= limit; ++i) {
    int fd = ::open((dir / (i % 2 ? "a.mdb" : "b.mdb")).c_str(), O_WRONLY);
    ::close(fd);
  }
  EXPECT_TRUE(w.read_events().overflow);
}

}  // namespace
}  // namespace dedupd::daemon::watch
