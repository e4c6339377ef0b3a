// The bytes of every learned shard kept beside the index (daemon/learn/
// copies): in the client's cache name of their CAS with the URL beside them,
// written whole or not at all, found again with their CAS, and nothing taken
// for a copy that is not one.
#include "daemon/learn/copies.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/temp_dir.hpp"
#include "xetcache/cas_url.hpp"

namespace dedupd::daemon::learn {
namespace {

namespace fs = std::filesystem;

const std::string kCas = "https://cas-server.xethub.hf.co";
const std::string kShardA(64, 'a');
const std::string kShardB(64, 'b');

std::vector<std::uint8_t> bytes_of(std::size_t n, std::uint8_t fill) { return std::vector<std::uint8_t>(n, fill); }

std::string read_text(const fs::path& p) {
  FILE* f = std::fopen(p.c_str(), "rb");
  if (!f) return "<missing>";
  std::string s;
  for (int c; (c = std::fgetc(f)) != EOF;) s.push_back(char(c));
  std::fclose(f);
  return s;
}

TEST(LearnedCopies, AShardIsKeptUnderItsCasWithTheUrlBeside) {
  tests::TempDir dir("copies");
  LearnedCopies copies(dir.path() + "/learned");
  auto kept = copies.keep(bytes_of(1000, 7), kShardA, kCas);
  ASSERT_TRUE(kept) << kept.error().to_string();
  const fs::path folder = fs::path(dir.path()) / "learned" / dedupd::xetcache::client_cache_dir_name(kCas);
  EXPECT_EQ(*kept, folder / (kShardA + ".mdb"));
  EXPECT_EQ(fs::file_size(*kept), 1000u);
  EXPECT_EQ(read_text(folder / "cas"), kCas + "\n");
  // Nothing half-written is left beside it.
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(folder)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{kShardA + ".mdb", "cas"}));
  EXPECT_EQ(copies.cas_of(*kept), kCas);
}

TEST(LearnedCopies, EveryCopyIsFoundWithItsCas) {
  tests::TempDir dir("copies");
  LearnedCopies copies(dir.path());
  const std::string other = "https://cas.example";
  ASSERT_TRUE(copies.keep(bytes_of(10, 1), kShardA, kCas));
  ASSERT_TRUE(copies.keep(bytes_of(20, 2), kShardB, kCas));
  ASSERT_TRUE(copies.keep(bytes_of(30, 3), kShardA, other));
  // What is not a finished copy is passed over: a temporary file, another
  // kind of file, a folder without its CAS.
  const fs::path folder = fs::path(dir.path()) / dedupd::xetcache::client_cache_dir_name(kCas);
  tests::write_file(folder / ("." + kShardB + ".mdb_temp"), "half");
  tests::write_file(folder / "notes.txt", "x");
  fs::create_directories(fs::path(dir.path()) / "stray");
  tests::write_file(dir / "stray/c.mdb", "x");
  auto all = copies.all();
  std::sort(all.begin(), all.end(), [](const auto& x, const auto& y) { return x.path < y.path; });
  ASSERT_EQ(all.size(), 3u);
  std::vector<std::pair<std::string, std::uint64_t>> seen;
  for (const auto& c : all) seen.emplace_back(c.cas, fs::file_size(c.path));
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::pair<std::string, std::uint64_t>>{{kCas, 10}, {kCas, 20}, {other, 30}}));
}

TEST(LearnedCopies, TheSameCopyAgainIsNotWrittenAgain) {
  tests::TempDir dir("copies");
  LearnedCopies copies(dir.path());
  auto first = copies.keep(bytes_of(100, 1), kShardA, kCas);
  ASSERT_TRUE(first);
  auto inode = [](const fs::path& p) {
    struct stat st {};
    EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
    return st.st_ino;
  };
  const auto written = inode(*first);
  auto again = copies.keep(bytes_of(100, 1), kShardA, kCas);
  ASSERT_TRUE(again) << again.error().to_string();
  EXPECT_EQ(*again, *first);
  EXPECT_EQ(inode(*again), written) << "a copy is written by a rename: a new file would be another inode";
  // Another size under that name is not the same copy: it is written anew.
  auto other = copies.keep(bytes_of(150, 2), kShardA, kCas);
  ASSERT_TRUE(other);
  EXPECT_EQ(fs::file_size(*other), 150u);
  EXPECT_NE(inode(*other), written);
}

TEST(LearnedCopies, OnlyACopyInAFolderOfItsOwnHasACas) {
  tests::TempDir dir("copies");
  LearnedCopies copies(dir.path());
  auto kept = copies.keep(bytes_of(10, 1), kShardA, kCas);
  ASSERT_TRUE(kept);
  EXPECT_EQ(copies.cas_of(fs::path(dir.path()) / "elsewhere" / (kShardA + ".mdb")), std::nullopt);
  EXPECT_EQ(copies.cas_of(fs::path("/var/cache") / (kShardA + ".mdb")), std::nullopt);
  EXPECT_EQ(copies.cas_of(dir / (kShardA + ".mdb")), std::nullopt);
  EXPECT_EQ(LearnedCopies().cas_of(*kept), std::nullopt);
}

TEST(LearnedCopies, WithoutAFolderOrWhereNothingCanBeWrittenItSaysWhy) {
  auto none = LearnedCopies().keep(bytes_of(10, 1), kShardA, kCas);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().rule, "daemon.learned_copy");
  EXPECT_EQ(none.error().message, "no folder for learned shards");
  EXPECT_TRUE(LearnedCopies().all().empty());

  tests::TempDir dir("copies");
  tests::write_file(dir / "file", "not a folder");
  LearnedCopies under_a_file(dir / "file");
  auto refused = under_a_file.keep(bytes_of(10, 1), kShardA, kCas);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().rule, "daemon.learned_copy");
  EXPECT_NE(refused.error().message.find("cannot create " + dir / "file"), std::string::npos)
      << refused.error().message;
  EXPECT_TRUE(under_a_file.all().empty());
}

}  // namespace
}  // namespace dedupd::daemon::learn
