#include "daemon/keys/global_dedup_key.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "tests/support/temp_dir.hpp"

namespace dedupd::daemon::keys {
namespace {

using namespace std::chrono_literals;
constexpr std::uint64_t kNow = 1'750'000'000;

TEST(GlobalDedupKey, CreatedOnceAndSurvivesARestart) {
  tests::TempDir dir;
  GlobalDedupKeyStore first(dir / "k", 24h);
  ASSERT_TRUE(first.load_or_create(kNow).ok());
  EXPECT_FALSE(first.current().is_zero());
  struct stat st {};
  ASSERT_EQ(::stat((dir / "k").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  GlobalDedupKeyStore second(dir / "k", 24h);
  ASSERT_TRUE(second.load_or_create(kNow + 3600).ok());
  EXPECT_EQ(second.current(), first.current());
  EXPECT_EQ(second.next_rotation(), kNow + 86400);
}

TEST(GlobalDedupKey, RotatesWhenDue) {
  tests::TempDir dir;
  GlobalDedupKeyStore store(dir / "k", 1h);
  ASSERT_TRUE(store.load_or_create(kNow).ok());
  auto k1 = store.current();
  EXPECT_FALSE(*store.rotate_if_due(kNow + 3599));
  EXPECT_EQ(store.current(), k1);
  EXPECT_TRUE(*store.rotate_if_due(kNow + 3600));
  EXPECT_NE(store.current(), k1);
  EXPECT_EQ(store.next_rotation(), kNow + 2 * 3600);
}

TEST(GlobalDedupKey, AnExpiredStoredKeyIsReplacedAtStart) {
  tests::TempDir dir;
  GlobalDedupKeyStore old(dir / "k", 1h);
  ASSERT_TRUE(old.load_or_create(kNow).ok());
  GlobalDedupKeyStore later(dir / "k", 1h);
  ASSERT_TRUE(later.load_or_create(kNow + 7200).ok());
  EXPECT_NE(later.current(), old.current());
}

TEST(GlobalDedupKey, AGarbledFileIsReplaced) {
  tests::TempDir dir;
  tests::write_file(dir / "k", "not a key\n");
  GlobalDedupKeyStore store(dir / "k", 1h);
  ASSERT_TRUE(store.load_or_create(kNow).ok());
  EXPECT_FALSE(store.current().is_zero());
}

TEST(GlobalDedupKey, AnUnwritableDirectoryIsAClearError) {
  GlobalDedupKeyStore store("/nonexistent/dir/k", 1h);
  auto r = store.load_or_create(kNow);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().rule, kRuleKeyStore);
  EXPECT_NE(r.error().message.find("/nonexistent/dir/k"), std::string::npos) << r.error().to_string();
}

}  // namespace
}  // namespace dedupd::daemon::keys
