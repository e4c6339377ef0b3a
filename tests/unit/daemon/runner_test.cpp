// The expiry runner (daemon/expiry/runner) over a real index and a real
// watcher: shards leave the index at their expiry, their files go once the
// grace has passed and only if they are the very files the index read inside
// a watched directory, a dry run only reports, and the size cap evicts the
// oldest expiring shards. The policy's arithmetic is in policy_test.cpp.
#include "daemon/expiry/runner.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "daemon/core/counters.hpp"
#include "daemon/watch/watcher.hpp"
#include "index/index.hpp"
#include "test_support.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/unit/daemon/index_in.hpp"

namespace dedupd::daemon::expiry {
namespace {

namespace fs = std::filesystem;
namespace st = shard::testing;
using namespace std::chrono_literals;

constexpr std::uint64_t kNow = 1'750'000'000;

class RunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(in);
    fs::create_directories(outside);
    idx = daemon::testing::open_index_in(dir / "index");
    ASSERT_TRUE(idx);
    watcher.set_roots({config::WatchDir{in}});
    runner = std::make_unique<Runner>(*idx, watcher, counters);
    config::ExpiryConfig c;
    c.delete_after = 1h;
    runner->set_config(c);
  }

  // A shard expiring at `expiry`, written to `folder` and ingested from there
  // as the watcher would hand it over; its hash.
  shard::Hash shard_in(const std::string& folder, std::uint64_t seed, std::optional<std::uint64_t> expiry,
                       std::size_t chunks = 8) {
    shard::ShardWriter w;
    w.add_xorb(st::make_xorb(seed, chunks).record);
    shard::WriteOptions wo;
    wo.footer.creation_timestamp = kNow - 1000 + seed;
    if (expiry) wo.footer.key_expiry = *expiry;
    const auto bytes = w.write(wo);
    const std::string path = folder + "/" + std::to_string(seed) + ".mdb";
    tests::write_file(path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    struct stat s {};
    EXPECT_EQ(::stat(path.c_str(), &s), 0);
    auto view = shard::ShardView::parse(bytes);
    EXPECT_TRUE(view);
    auto r = idx->ingest(
        *view,
        index::SourceInfo{path, bytes.size(), std::int64_t(s.st_mtim.tv_sec) * 1'000'000'000 + s.st_mtim.tv_nsec},
        {.now = kNow});
    EXPECT_TRUE(r) << (r ? "" : r.error().to_string());
    paths[seed] = path;
    return r ? r->shard : shard::Hash{};
  }

  index::ShardState state_of(const shard::Hash& h) {
    auto s = idx->shard(h);
    EXPECT_TRUE(s && *s);
    return s && *s ? (*s)->state : index::ShardState::removed;
  }

  tests::TempDir dir{"expiry-runner"};
  std::string in = dir / "in", outside = dir / "outside";
  std::unique_ptr<index::Index> idx;
  watch::Watcher watcher;
  core::Counters counters;
  std::unique_ptr<Runner> runner;
  std::map<std::uint64_t, std::string> paths;
};

TEST_F(RunnerTest, AShardLeavesTheIndexAtItsExpiryAndItsFileAfterTheGrace) {
  const shard::Hash soon = shard_in(in, 1, kNow + 100), later = shard_in(in, 2, kNow + 10'000),
                    never = shard_in(in, 3, std::nullopt);
  auto before = runner->run(kNow, false);
  ASSERT_TRUE(before) << before.error().to_string();
  EXPECT_TRUE(before->expired.empty());
  EXPECT_EQ(runner->next_due(kNow), kNow + 100);

  auto at_expiry = runner->run(kNow + 100, false);
  ASSERT_TRUE(at_expiry) << at_expiry.error().to_string();
  EXPECT_EQ(at_expiry->expired, std::vector<shard::Hash>{soon});
  EXPECT_TRUE(at_expiry->deleted_files.empty()) << "the grace has not passed";
  EXPECT_EQ(state_of(soon), index::ShardState::expired);
  EXPECT_EQ(state_of(later), index::ShardState::live);
  EXPECT_TRUE(fs::exists(paths[1]));
  EXPECT_EQ(counters.shards_expired, 1u);
  EXPECT_EQ(runner->next_due(kNow + 100), kNow + 100 + 3600) << "the end of the grace comes before the next expiry";

  auto after_grace = runner->run(kNow + 100 + 3600, false);
  ASSERT_TRUE(after_grace);
  EXPECT_TRUE(after_grace->expired.empty());
  EXPECT_EQ(after_grace->deleted_files, std::vector<std::string>{paths[1]});
  EXPECT_FALSE(fs::exists(paths[1]));
  EXPECT_EQ(counters.files_deleted, 1u);
  auto source = idx->source(paths[1]);
  ASSERT_TRUE(source);
  EXPECT_FALSE(*source) << "the index forgets the file it deleted";
  EXPECT_TRUE(fs::exists(paths[2]));
  EXPECT_TRUE(fs::exists(paths[3]));
  EXPECT_EQ(state_of(never), index::ShardState::live);
  EXPECT_EQ(runner->next_due(kNow + 100 + 3600), kNow + 10'000);
}

TEST_F(RunnerTest, ADryRunReportsWhatIsDueAndChangesNothing) {
  const shard::Hash due = shard_in(in, 4, kNow + 10);
  auto dry = runner->run(kNow + 10 + 3600, true);
  ASSERT_TRUE(dry) << dry.error().to_string();
  EXPECT_EQ(dry->expired, std::vector<shard::Hash>{due});
  EXPECT_EQ(dry->deleted_files, std::vector<std::string>{paths[4]}) << "it would go too: due as if expired";
  EXPECT_EQ(state_of(due), index::ShardState::live);
  EXPECT_TRUE(fs::exists(paths[4]));
  EXPECT_EQ(counters.shards_expired, 0u);
  EXPECT_EQ(counters.files_deleted, 0u);
}

TEST_F(RunnerTest, OnlyTheVeryFileTheIndexReadInsideAWatchedDirectoryIsDeleted) {
  shard_in(in, 5, kNow + 10);
  shard_in(in, 6, kNow + 10);
  shard_in(outside, 7, kNow + 10);
  shard_in(in, 8, kNow + 10);
  // Changed since it was read: somebody else's now.
  tests::write_file(paths[6], "another file under that name");
  // Gone already.
  fs::remove(paths[8]);
  auto r = runner->run(kNow + 10 + 3600, false);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->expired.size(), 4u);
  EXPECT_EQ(r->deleted_files, std::vector<std::string>{paths[5]});
  EXPECT_FALSE(fs::exists(paths[5]));
  EXPECT_TRUE(fs::exists(paths[6]));
  EXPECT_TRUE(fs::exists(paths[7])) << "outside every watched directory";
  auto gone = idx->source(paths[8]);
  ASSERT_TRUE(gone);
  EXPECT_FALSE(*gone) << "a file found gone is forgotten";
  auto kept = idx->source(paths[7]);
  ASSERT_TRUE(kept);
  EXPECT_TRUE(*kept);
}

TEST_F(RunnerTest, WithoutAGraceFilesAreKeptForever) {
  config::ExpiryConfig c;
  c.delete_after = std::nullopt;
  runner->set_config(c);
  shard_in(in, 9, kNow + 10);
  auto r = runner->run(kNow + 1'000'000, false);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->expired.size(), 1u);
  EXPECT_TRUE(r->deleted_files.empty());
  EXPECT_TRUE(fs::exists(paths[9]));
}

TEST_F(RunnerTest, TheSizeCapEvictsTheOldestExpiringShardsFirst) {
  const shard::Hash oldest = shard_in(in, 10, kNow + 50'000, 64);
  const shard::Hash middle = shard_in(in, 11, kNow + 60'000, 64);
  const shard::Hash newest = shard_in(in, 12, kNow + 70'000, 64);
  const shard::Hash forever = shard_in(in, 13, std::nullopt, 64);
  const std::uint64_t each = fs::file_size(paths[10]);
  config::ExpiryConfig c;
  c.delete_after = 1h;
  c.max_bytes = 2 * each + each / 2;  // room for two and a half
  runner->set_config(c);

  auto dry = runner->run(kNow, true);
  ASSERT_TRUE(dry);
  EXPECT_EQ(dry->expired, std::vector<shard::Hash>{oldest});
  EXPECT_EQ(state_of(oldest), index::ShardState::live) << "a dry run evicts nothing";

  auto r = runner->run(kNow, false);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->expired, std::vector<shard::Hash>{oldest});
  EXPECT_EQ(r->deleted_files, std::vector<std::string>{paths[10]});
  EXPECT_EQ(state_of(oldest), index::ShardState::removed);
  EXPECT_EQ(counters.shards_removed, 1u);
  EXPECT_EQ(state_of(middle), index::ShardState::live);
  EXPECT_EQ(state_of(newest), index::ShardState::live);
  EXPECT_EQ(state_of(forever), index::ShardState::live) << "a shard that never expires is not under the cap";
  EXPECT_TRUE(fs::exists(paths[13]));
}

}  // namespace
}  // namespace dedupd::daemon::expiry
