// The file that keeps key filters across a restart: what is written is
// read back bit for bit, and a file in any doubt (cut short, a flipped
// bit, another format, sizes that do not add up) gives nothing, with an
// error naming the file; a filter over the budget is left out.
#include "fleet/key_filters_file.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <iterator>

#include "tests/unit/fleet/kept_of.hpp"

namespace dedupd::fleet {
namespace {

namespace fs = std::filesystem;

class TempFile {
 public:
  TempFile() {
    char tmpl[] = "/tmp/dedupd-kept-filters-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
  }
  ~TempFile() { fs::remove_all(dir_); }
  fs::path path() const { return dir_ / "fleet-key-filters"; }

 private:
  fs::path dir_;
};

std::vector<char> bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
void write_bytes(const fs::path& p, const std::vector<char>& b) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(b.data(), std::streamsize(b.size()));
}

TEST(KeptFiltersFile, WhatIsWrittenIsReadBackBitForBit) {
  TempFile file;
  KeyFilters set(64 << 20);
  const shard::Key raw{}, key = index::gen::hash_of_seed(77);
  ASSERT_TRUE(set.adopt(kept_of(raw, 1, 5000)));
  ASSERT_TRUE(set.adopt(kept_of(key, 90000, 700, 8)));
  auto saved = save_kept_filters(set, file.path());
  ASSERT_TRUE(saved) << saved.error().to_string();
  EXPECT_EQ(saved->filters, 2u);
  EXPECT_EQ(saved->entries, 5700u);
  EXPECT_EQ(saved->bytes, fs::file_size(file.path()));
  EXPECT_FALSE(fs::exists(file.path().string() + ".new")) << "the temporary file is renamed over";

  KeyFilters again(64 << 20);
  auto loaded = load_kept_filters(again, file.path());
  ASSERT_TRUE(loaded) << loaded.error().to_string();
  EXPECT_EQ(loaded->filters, 2u);
  EXPECT_EQ(loaded->skipped, 0u);
  EXPECT_EQ(loaded->entries, 5700u);
  auto before = set.kept(), after = again.kept();
  ASSERT_EQ(after.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(after[i].key, before[i].key);
    EXPECT_EQ(after[i].xorbs, before[i].xorbs);
    EXPECT_EQ(after[i].filter->bits_per_entry(), before[i].filter->bits_per_entry());
    EXPECT_EQ(after[i].filter->added(), before[i].filter->added());
    EXPECT_EQ(after[i].filter->capacity(), before[i].filter->capacity());
    EXPECT_TRUE(std::equal(after[i].filter->words().begin(), after[i].filter->words().end(),
                           before[i].filter->words().begin(), before[i].filter->words().end()));
  }
  // Taken in, not yet listed: no lookup uses them before the key's xorbs
  // are listed in the database it asks.
  EXPECT_EQ(again.usable(raw, "", ""), nullptr);
  EXPECT_EQ(again.budget_left(), std::int64_t(64 << 20) - again.summary().bytes);
  EXPECT_GT(again.summary().bytes, 0);
}

TEST(KeptFiltersFile, NoFileIsNothingToRead) {
  TempFile file;
  KeyFilters set(1 << 20);
  auto loaded = load_kept_filters(set, file.path());
  ASSERT_TRUE(loaded) << loaded.error().to_string();
  EXPECT_EQ(loaded->filters, 0u);
  EXPECT_TRUE(set.kept().empty());
}

// Each kind of damage on its own copy of a good file: nothing is taken,
// and the error names the file and what is wrong.
TEST(KeptFiltersFile, AFileInDoubtGivesNothing) {
  TempFile file;
  {
    KeyFilters set(64 << 20);
    ASSERT_TRUE(set.adopt(kept_of(shard::Key{}, 1, 5000)));
    ASSERT_TRUE(save_kept_filters(set, file.path()));
  }
  const auto good = bytes_of(file.path());
  ASSERT_GT(good.size(), 1000u);
  struct Case {
    const char* what;
    std::function<void(std::vector<char>&)> damage;
    const char* says;
  };
  const std::vector<Case> cases = {
      {"a bit flipped in the filter's words", [](auto& b) { b[b.size() - 200] ^= 0x10; }, "checksum"},
      {"a bit flipped in a xorb", [](auto& b) { b[24 + 64 + 3] ^= 1; }, "checksum"},
      {"cut short", [](auto& b) { b.resize(b.size() - 100); }, "cut short"},
      {"a byte too many", [](auto& b) { b.push_back(0); }, "checksum"},
      {"another program's file", [](auto& b) { b[0] = 'X'; }, "not a file of kept key filters"},
      {"another format", [](auto& b) { b[8] = 9; }, "format 9"},
      {"another layout", [](auto& b) { b[12] = 2; }, "layout 2"},
      {"bits an entry out of bounds", [](auto& b) { b[24 + 32] = 40; }, "not one this dedupd makes"},
      {"more xorbs than the file holds", [](auto& b) { b[24 + 48 + 6] = 1; }, "more than the file holds"},
      {"empty", [](auto& b) { b.clear(); }, "not a file of kept key filters"},
  };
  for (const auto& c : cases) {
    auto b = good;
    c.damage(b);
    write_bytes(file.path(), b);
    KeyFilters set(64 << 20);
    auto loaded = load_kept_filters(set, file.path());
    ASSERT_FALSE(loaded) << c.what << ": taken";
    EXPECT_NE(loaded.error().message.find(c.says), std::string::npos) << c.what << ": " << loaded.error().message;
    EXPECT_NE(loaded.error().message.find(file.path().string()), std::string::npos) << c.what;
    EXPECT_TRUE(set.kept().empty()) << c.what;
    EXPECT_EQ(set.budget_left(), 64 << 20) << c.what;
  }
}

// A smaller budget since: what no longer fits is left out and counted, the
// rest taken; the raw filter keeps to its half.
TEST(KeptFiltersFile, WhatNoLongerFitsTheBudgetIsLeftOut) {
  TempFile file;
  const shard::Key key = index::gen::hash_of_seed(5);
  {
    KeyFilters set(64 << 20);
    ASSERT_TRUE(set.adopt(kept_of(shard::Key{}, 1, 100000)));  // about 195 KiB
    ASSERT_TRUE(set.adopt(kept_of(key, 900000, 1000)));        // about 2 KiB
    ASSERT_TRUE(save_kept_filters(set, file.path()));
  }
  KeyFilters small(300 << 10);  // the raw filter is over its half
  auto loaded = load_kept_filters(small, file.path());
  ASSERT_TRUE(loaded) << loaded.error().to_string();
  EXPECT_EQ(loaded->filters, 1u);
  EXPECT_EQ(loaded->skipped, 1u);
  ASSERT_EQ(small.kept().size(), 1u);
  EXPECT_EQ(small.kept()[0].key, key);
}

TEST(KeptFiltersFile, AnUnwritableDirectoryIsAnErrorThatNamesIt) {
  KeyFilters set(1 << 20);
  ASSERT_TRUE(set.adopt(kept_of(shard::Key{}, 1, 100)));
  const fs::path path = "/nonexistent-dedupd-dir/fleet-key-filters";
  auto saved = save_kept_filters(set, path);
  ASSERT_FALSE(saved);
  EXPECT_NE(saved.error().message.find("/nonexistent-dedupd-dir"), std::string::npos) << saved.error().message;
}

}  // namespace
}  // namespace dedupd::fleet
