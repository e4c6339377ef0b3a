// index/page_check: every page of an index's trees, walked from the file.
// Files LMDB wrote (with a history of merges, removals and expiry, and the
// checked-in indexes of every schema) pass, every page accounted for; a
// page made wrong in the ways LMDB would read outside it is named.
#include "index/page_check.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "index/index.hpp"
#include "tests/unit/index/support.hpp"

namespace dedupd::index::gen {
namespace {

namespace fs = std::filesystem;
using Verdict = DataFileCheck::Verdict;
using Image = std::vector<std::uint8_t>;

constexpr std::size_t kPage = 4096;

Image read_all(const fs::path& file) {
  std::ifstream f(file, std::ios::binary);
  return Image(std::istreambuf_iterator<char>(f), {});
}

DataFileCheck check(const Image& image) {
  return check_data_pages(image.size(), [&](std::uint64_t offset, std::span<std::uint8_t> out) {
    if (offset > image.size() || out.size() > image.size() - offset) return false;
    std::memcpy(out.data(), image.data() + offset, out.size());
    return true;
  });
}

std::uint16_t u16_at(const Image& image, std::size_t at) {
  std::uint16_t v;
  std::memcpy(&v, image.data() + at, 2);
  return v;
}
void put16(Image& image, std::size_t at, std::uint16_t v) { std::memcpy(image.data() + at, &v, 2); }

// An index with a history: shards in, a merge, removals, an expiry, a
// keyed shard and files, so every table and the free list have pages.
void fill_with_history(const std::string& dir) {
  auto idx = Index::open(Options{.dir = dir});
  ASSERT_TRUE(idx) << idx.error().to_string();
  std::vector<Hash> shards;
  for (std::uint64_t i = 0; i < 12; ++i) {
    GenXorb a = gen_xorb(100 + 2 * i, 700), b = gen_xorb(101 + 2 * i, 90);
    ShardSpec spec{.xorbs = {&a, &b}, .created = 1700000000 + i};
    if (i % 4 == 1) spec.key = hash_of_seed(500 + i);
    if (i % 4 == 2) spec.expiry = 1750000000;
    spec.files.push_back(gen_file(300 + i, a, 0, 64, true, true));
    OwnedShard s = own(build_shard(spec));
    auto r = (*idx)->ingest(*s.view, SourceInfo{.path = "/w/" + std::to_string(i) + ".mdb"}, IngestOptions{});
    ASSERT_TRUE(r) << r.error().to_string();
    shards.push_back(r->shard);
    if (i == 5) {
      ASSERT_TRUE((*idx)->merge_recent());
    }
  }
  for (std::size_t i : {0u, 3u, 7u}) {
    ASSERT_TRUE((*idx)->remove(shards[i]));
  }
  ASSERT_TRUE((*idx)->expire(1760000000));
}

class PageCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    fill_with_history(dir.path());
    image = read_all(fs::path(dir.path()) / "data.mdb");
    walked = check(image);
    ASSERT_EQ(walked.verdict, Verdict::ok) << walked.problem;
  }
  // The newest meta's main tree root: a leaf naming the tables.
  std::size_t main_root() const { return std::size_t(walked.main_root) * kPage; }
  // Where the main tree's first node keeps its table's root page, and
  // that table's name (the first in byte order).
  std::size_t first_table_root_at() const {
    const std::size_t off = u16_at(image, main_root() + 16);
    return main_root() + off + 8 + u16_at(image, main_root() + off + 6) + 40;
  }
  std::string first_table() const {
    const std::size_t off = u16_at(image, main_root() + 16);
    const auto* key = reinterpret_cast<const char*>(image.data() + main_root() + off + 8);
    return std::string(key, u16_at(image, main_root() + off + 6));
  }

  TempDir dir;
  Image image;
  DataFileCheck walked;
};

TEST_F(PageCheck, AnIndexWithAHistoryHasEveryPageAccountedFor) {
  EXPECT_GT(walked.pages_in_use, 20u);
  EXPECT_GT(walked.pages_free, 0u);
  EXPECT_EQ(walked.pages_in_use + walked.pages_free + 2, walked.last_page + 1);
  // The same through the file.
  DataFileCheck c = check_data_file_pages(dir.path());
  EXPECT_EQ(c.verdict, Verdict::ok) << c.problem;
  EXPECT_EQ(c.pages_in_use, walked.pages_in_use);
}

TEST(PageCheckFixtures, EveryCheckedInIndexPasses) {
  for (int v = 1; v <= 6; ++v) {
    const std::string dir = std::string(DEDUPD_FIXTURE_DIR) + "/index-v" + std::to_string(v);
    DataFileCheck c = check_data_file_pages(dir);
    EXPECT_EQ(c.verdict, Verdict::ok) << dir << ": " << c.problem;
    EXPECT_EQ(c.pages_in_use + c.pages_free + 2, c.last_page + 1) << dir;
  }
}

TEST_F(PageCheck, APageThatCallsItselfAnotherIsNamed) {
  std::uint64_t root = 0;
  std::memcpy(&root, image.data() + first_table_root_at(), 8);
  std::memcpy(image.data() + root * kPage, "\x07\x00\x00\x00\x00\x00\x00\x00", 8);
  DataFileCheck c = check(image);
  EXPECT_EQ(c.verdict, Verdict::damaged);
  EXPECT_EQ(c.problem, "page " + std::to_string(root) + " (table \"" + first_table() + "\") calls itself page 7");
}

TEST_F(PageCheck, FreeSpaceBoundsOutsideThePageAreNamed) {
  put16(image, main_root() + 14, 5000);  // upper past the page's end
  DataFileCheck c = check(image);
  EXPECT_EQ(c.verdict, Verdict::damaged);
  EXPECT_NE(c.problem.find("free space from"), std::string::npos) << c.problem;
  EXPECT_NE(c.problem.find("is not inside its 4096 bytes"), std::string::npos) << c.problem;
}

TEST_F(PageCheck, ANodeOutsideThePageIsNamed) {
  put16(image, main_root() + 16, 4094);  // node 0 at the page's last two bytes
  DataFileCheck c = check(image);
  EXPECT_EQ(c.verdict, Verdict::damaged);
  EXPECT_NE(c.problem.find("node 0 at offset 4094 does not lie inside the page's nodes"), std::string::npos)
      << c.problem;
}

TEST_F(PageCheck, KeysOutOfOrderAreNamed) {
  // The tables' names in the main tree: swap the first two nodes.
  const std::uint16_t first = u16_at(image, main_root() + 16), second = u16_at(image, main_root() + 18);
  put16(image, main_root() + 16, second);
  put16(image, main_root() + 18, first);
  DataFileCheck c = check(image);
  EXPECT_EQ(c.verdict, Verdict::damaged);
  EXPECT_NE(c.problem.find("key 1 is not after the one before it"), std::string::npos) << c.problem;
}

TEST_F(PageCheck, ATableRecordPointingAtAnotherTreeIsNamed) {
  // Every table's root is a page in use: pointing one table at the main
  // tree's root reaches that page twice.
  std::memcpy(image.data() + first_table_root_at(), &walked.main_root, 8);
  DataFileCheck c = check(image);
  EXPECT_EQ(c.verdict, Verdict::damaged);
  EXPECT_NE(c.problem.find("is reached twice"), std::string::npos) << c.problem;
}

// Whatever is written over any page, the walk ends with a verdict, and it
// names a page whenever it says damaged. Pages it passes after a scribble
// are pages no tree holds (free), or bytes of a value.
TEST_F(PageCheck, EveryPageScribbledOnEndsWithAVerdict) {
  std::size_t named = 0;
  for (std::uint64_t p = 2; p <= walked.last_page; ++p) {
    Image copy = image;
    for (std::size_t i = 0; i < 64; ++i) copy[p * kPage + 8 + i] = std::uint8_t(0xA5 ^ i);
    DataFileCheck c = check(copy);
    if (c.verdict == Verdict::ok) continue;
    EXPECT_EQ(c.verdict, Verdict::damaged) << p << ": " << c.problem;
    EXPECT_NE(c.problem.find("page"), std::string::npos) << c.problem;
    ++named;
  }
  EXPECT_GE(named, walked.pages_in_use / 2) << "of " << walked.pages_in_use << " pages in use";
}

}  // namespace
}  // namespace dedupd::index::gen
