// The index opened at start, or moved aside when damaged
// (daemon/supervisor/index_opening): a healthy index opens where it is; the
// mark a run that found damage left, or a data file the start-up checks find
// broken, moves the index aside (kept for an admin, named with the time) and
// a new one starts, with the health board saying why until it is rebuilt.
#include "daemon/supervisor/index_opening.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "daemon/jobs/rebuild_restart.hpp"
#include "tests/support/temp_dir.hpp"

namespace dedupd::daemon::supervisor {
namespace {

namespace fs = std::filesystem;

class IndexOpeningTest : public ::testing::Test {
 protected:
  index::Options options() const {
    index::Options o;
    o.dir = index_dir;
    return o;
  }

  // A healthy index with one meta write, closed again.
  void make_index() {
    core::IndexHealthBoard board;
    ASSERT_TRUE(open_or_move_aside(options(), board));
    ASSERT_TRUE(fs::exists(index_dir + "/data.mdb"));
  }

  // The directories beside the index that hold a damaged one.
  std::vector<std::string> set_aside() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir.path()))
      if (e.path().filename().native().starts_with("index.damaged-")) out.push_back(e.path().native());
    std::sort(out.begin(), out.end());
    return out;
  }

  tests::TempDir dir{"index-opening"};
  std::string index_dir = dir / "index";
  core::IndexHealthBoard health;
};

TEST_F(IndexOpeningTest, AHealthyIndexOpensWhereItIs) {
  make_index();
  auto idx = open_or_move_aside(options(), health);
  ASSERT_TRUE(idx);
  EXPECT_FALSE(health.rebuilding());
  EXPECT_TRUE(health.get().damage.empty());
  EXPECT_TRUE(set_aside().empty());
}

TEST_F(IndexOpeningTest, TheMarkOfARunThatFoundDamageMovesTheIndexAside) {
  make_index();
  std::ofstream(index_dir + "/" + jobs::kDamagedMark) << "the scrub found page 7 unreadable\n";
  auto idx = open_or_move_aside(options(), health);
  ASSERT_TRUE(idx) << "a new index is opened in its place";
  const auto aside = set_aside();
  ASSERT_EQ(aside.size(), 1u);
  EXPECT_TRUE(fs::exists(aside[0] + "/data.mdb")) << "the damaged index is kept for an admin";
  EXPECT_TRUE(fs::exists(aside[0] + "/" + jobs::kDamagedMark));
  EXPECT_FALSE(fs::exists(index_dir + "/" + jobs::kDamagedMark)) << "the new index starts without the mark";
  EXPECT_TRUE(health.rebuilding());
  const core::IndexHealth h = health.get();
  EXPECT_EQ(h.state, "rebuilding");
  EXPECT_EQ(h.damage, "the scrub found page 7 unreadable");
  EXPECT_EQ(h.moved_to, aside[0]);
  EXPECT_GT(h.found_at, 0u);
  auto stats = idx->stats();
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->shards_live, 0u);
}

TEST_F(IndexOpeningTest, AnEmptyMarkStillMovesItAsideAndTwoMovesKeepBoth) {
  make_index();
  std::ofstream(index_dir + "/" + jobs::kDamagedMark).flush();
  ASSERT_TRUE(open_or_move_aside(options(), health));
  EXPECT_EQ(health.get().damage, "marked as damaged");
  std::ofstream(index_dir + "/" + jobs::kDamagedMark) << "again\n";
  core::IndexHealthBoard second;
  ASSERT_TRUE(open_or_move_aside(options(), second));
  const auto aside = set_aside();
  ASSERT_EQ(aside.size(), 2u) << "a second damaged index does not replace the first";
  EXPECT_NE(aside[0], aside[1]);
  EXPECT_EQ(second.get().damage, "again");
}

TEST_F(IndexOpeningTest, ADataFileTheChecksFindBrokenMovesTheIndexAside) {
  make_index();
  fs::resize_file(index_dir + "/data.mdb", 0);
  auto idx = open_or_move_aside(options(), health);
  ASSERT_TRUE(idx);
  ASSERT_EQ(set_aside().size(), 1u);
  EXPECT_TRUE(health.rebuilding());
  EXPECT_FALSE(health.get().damage.empty());
  EXPECT_NE(health.get().damage.find("data.mdb"), std::string::npos) << health.get().damage;
}

}  // namespace
}  // namespace dedupd::daemon::supervisor
