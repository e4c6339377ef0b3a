// One steward per Xet cache (daemon/xetcache/cache_lock): the lock file in
// the root, held by one CacheLock and saying whose it is; a second stands by,
// naming the holder, and takes over as soon as the first lets go; a root
// where no lock file can be made is not stewarded.
#include "daemon/xetcache/cache_lock.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "tests/support/temp_dir.hpp"

namespace dedupd::daemon::xetcache {
namespace {

namespace fs = std::filesystem;

std::string lock_text(const std::string& root) {
  std::ifstream in(root + "/.dedupd-xet-cache.lock");
  std::string line;
  std::getline(in, line);
  return line;
}

TEST(CacheLock, OneHoldsItAndSaysWhoTheOtherStandsBy) {
  tests::TempDir root("cache-lock");
  CacheLock first;
  EXPECT_FALSE(first.held());
  ASSERT_TRUE(first.take(root.path()));
  EXPECT_TRUE(first.held());
  EXPECT_TRUE(first.holder().empty());
  EXPECT_TRUE(first.take(root.path())) << "taking it again is holding it";
  const std::string me = "pid " + std::to_string(::getpid()) + " on ";
  EXPECT_EQ(lock_text(root.path()).rfind(me, 0), 0u) << lock_text(root.path());

  // Another lock file description (another dedupd): flock refuses it.
  auto second = std::make_unique<CacheLock>();
  EXPECT_FALSE(second->take(root.path()));
  EXPECT_FALSE(second->held());
  EXPECT_EQ(second->holder().rfind(me, 0), 0u) << second->holder();
  EXPECT_EQ(second->holder().find('\n'), std::string::npos);
}

TEST(CacheLock, TheOtherTakesOverOnceTheHolderLetsGo) {
  tests::TempDir root("cache-lock");
  auto first = std::make_unique<CacheLock>();
  ASSERT_TRUE(first->take(root.path()));
  CacheLock second;
  ASSERT_FALSE(second.take(root.path()));
  first.reset();
  EXPECT_TRUE(second.take(root.path())) << "the file stays open: only the flock is tried again";
  EXPECT_TRUE(second.holder().empty());
  EXPECT_TRUE(fs::exists(root / ".dedupd-xet-cache.lock"));
}

TEST(CacheLock, ARootWithoutALockFileIsNotStewarded) {
  tests::TempDir dir("cache-lock");
  CacheLock lock;
  EXPECT_FALSE(lock.take(dir / "missing-root"));
  EXPECT_EQ(lock.holder(), "cannot open the lock file: No such file or directory");
  // A link in its place is not followed.
  fs::create_directories(dir / "root");
  fs::create_symlink(dir / "elsewhere", dir / "root/.dedupd-xet-cache.lock");
  CacheLock linked;
  EXPECT_FALSE(linked.take(dir / "root"));
  EXPECT_EQ(linked.holder().rfind("cannot open the lock file: ", 0), 0u) << linked.holder();
  EXPECT_FALSE(fs::exists(dir / "elsewhere"));
}

}  // namespace
}  // namespace dedupd::daemon::xetcache
