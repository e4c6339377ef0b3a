// index/file_check: what is told of data.mdb before LMDB maps it, on files
// an index wrote and then damaged the ways a disk or a person does.
#include "index/file_check.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "index/index.hpp"
#include "tests/unit/index/support.hpp"

namespace dedupd::index::gen {
namespace {

namespace fs = std::filesystem;
using Verdict = DataFileCheck::Verdict;

// Three shards of two xorbs each in a new index at `dir`.
void fill(const std::string& dir) {
  auto idx = Index::open(Options{.dir = dir});
  ASSERT_TRUE(idx) << idx.error().to_string();
  for (std::uint64_t i = 0; i < 3; ++i) {
    GenXorb a = gen_xorb(40 + 2 * i, 512), b = gen_xorb(41 + 2 * i, 512);
    OwnedShard s = own(build_shard({.xorbs = {&a, &b}, .created = 1700000000 + i}));
    ASSERT_TRUE((*idx)->ingest(*s.view, SourceInfo{}, IngestOptions{}));
  }
}

class FileCheck : public ::testing::Test {
 protected:
  void SetUp() override { fill(dir.path()); }
  fs::path data() const { return fs::path(dir.path()) / "data.mdb"; }
  void write_at(std::uint64_t offset, std::size_t n, char byte) {
    std::fstream f(data(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(offset));
    std::string bytes(n, byte);
    f.write(bytes.data(), std::streamsize(n));
  }
  TempDir dir;
};

TEST_F(FileCheck, AnIndexAsWrittenIsOk) {
  DataFileCheck c = check_data_file(dir.path());
  EXPECT_EQ(c.verdict, Verdict::ok) << c.problem;
  EXPECT_TRUE(c.problem.empty());
  EXPECT_EQ(c.page_size, 4096u);
  EXPECT_GT(c.last_page, 2u);
  EXPECT_GT(c.txnid, 0u);
}

TEST_F(FileCheck, NoFileIsANewIndex) {
  TempDir empty;
  EXPECT_EQ(check_data_file(empty.path()).verdict, Verdict::absent);
}

TEST_F(FileCheck, ATruncationIsNamedWithTheBytesItLacks) {
  const DataFileCheck before = check_data_file(dir.path());
  fs::resize_file(data(), before.last_page * 4096);  // the last page cut off
  DataFileCheck c = check_data_file(dir.path());
  EXPECT_EQ(c.verdict, Verdict::damaged);
  EXPECT_NE(c.problem.find("truncated"), std::string::npos) << c.problem;
  EXPECT_NE(c.problem.find(std::to_string((before.last_page + 1) * 4096)), std::string::npos) << c.problem;
}

TEST_F(FileCheck, AnEmptyOrTinyFileIsDamaged) {
  fs::resize_file(data(), 0);
  EXPECT_EQ(check_data_file(dir.path()).verdict, Verdict::damaged);
  fs::resize_file(data(), 100);
  EXPECT_EQ(check_data_file(dir.path()).verdict, Verdict::damaged);
}

TEST_F(FileCheck, EitherMetaPageZeroedIsDamage) {
  // LMDB 0.9 refuses a file with either meta page unreadable.
  for (int page : {0, 1}) {
    TempDir copy;
    fs::copy_file(data(), fs::path(copy.path()) / "data.mdb");
    std::fstream f(fs::path(copy.path()) / "data.mdb", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(page * 4096);
    std::string zeros(4096, '\0');
    f.write(zeros.data(), 4096);
    f.close();
    DataFileCheck c = check_data_file(copy.path());
    EXPECT_EQ(c.verdict, Verdict::damaged) << page;
    EXPECT_NE(c.problem.find("meta page " + std::to_string(page)), std::string::npos) << c.problem;
  }
}

TEST_F(FileCheck, ARootThatIsNotATreePageIsDamage) {
  const DataFileCheck before = check_data_file(dir.path());
  ASSERT_EQ(before.verdict, Verdict::ok);
  // Every page past the metas overwritten: the roots among them.
  write_at(2 * 4096, (before.last_page - 1) * 4096, '\x5a');
  DataFileCheck c = check_data_file(dir.path());
  EXPECT_EQ(c.verdict, Verdict::damaged);
  EXPECT_NE(c.problem.find("root"), std::string::npos) << c.problem;
}

TEST_F(FileCheck, ADirectoryInItsPlaceCannotBeRead) {
  fs::remove(data());
  fs::create_directory(data());
  EXPECT_EQ(check_data_file(dir.path()).verdict, Verdict::unreadable);
}

// The scrub: a clean index passes in slices of any size, each item once;
// a chunk entry that names a xorb that is not there is found.
TEST(Scrub, ACleanIndexPassesInSlicesOfAnySize) {
  TempDir dir;
  fill(dir.path());
  auto idx = Index::open(Options{.dir = dir.path()});
  ASSERT_TRUE(idx);
  std::uint64_t whole = 0;
  for (std::size_t slice : {std::size_t(1), std::size_t(7), std::size_t(1000), std::size_t(1) << 20}) {
    Index::ScrubPosition pos;
    std::size_t calls = 0;
    do {
      auto found = (*idx)->scrub(pos, slice);
      ASSERT_TRUE(found) << found.error().to_string();
      EXPECT_TRUE(found->empty()) << found->front();
      ++calls;
    } while (!pos.done && calls < 100000);
    ASSERT_TRUE(pos.done);
    if (whole == 0) whole = pos.items;
    EXPECT_EQ(pos.items, whole) << "slice " << slice << ": every item once";
    if (slice == 1) {
      EXPECT_EQ(calls, whole + 1);
    }
  }
  EXPECT_GT(whole, 3u * 1024) << "the chunk entries at least";
}

// A slice ends when its time is up, whatever is left of `max_items`, but
// checks one item at least: with no time at all each call checks exactly
// one, and the pass still ends with every item checked once.
TEST(Scrub, ASliceEndsWhenItsTimeIsUpAndChecksOneItemAtLeast) {
  TempDir dir;
  fill(dir.path());
  auto idx = Index::open(Options{.dir = dir.path()});
  ASSERT_TRUE(idx);
  Index::ScrubPosition whole_pass;
  while (!whole_pass.done) ASSERT_TRUE((*idx)->scrub(whole_pass, 1 << 20));
  const std::uint64_t whole = whole_pass.items;

  Index::ScrubPosition pos;
  std::uint64_t calls = 0;
  do {
    const std::uint64_t before = pos.items;
    auto found = (*idx)->scrub(pos, 4096, std::chrono::steady_clock::duration::zero());
    ASSERT_TRUE(found) << found.error().to_string();
    ASSERT_TRUE(found->empty()) << found->front();
    ++calls;
    if (!pos.done) {
      ASSERT_EQ(pos.items - before, 1u) << "call " << calls << ": the time was up";
    }
  } while (!pos.done && calls <= whole + 1);
  ASSERT_TRUE(pos.done);
  EXPECT_EQ(pos.items, whole) << "every item once";
  EXPECT_EQ(calls, whole + 1) << "one item a call, and the call that finds the end";
}

// The last item a slice checked may be gone by the next slice (a shard
// removed between them): the walk goes on from the next one, and what it
// reads is the index, never the position it kept (under ASan, a read of
// that freed copy fails the test). Each shard in turn owns the last entry.
TEST(Scrub, AnItemRemovedBetweenSlicesIsNoProblem) {
  for (std::uint64_t removed = 0; removed < 3; ++removed) {
    TempDir dir;
    fill(dir.path());
    auto idx = Index::open(Options{.dir = dir.path()});
    ASSERT_TRUE(idx);
    Index::ScrubPosition pos;
    std::uint64_t in_chunks = 0;
    while (!pos.done && in_chunks < 500) {
      auto found = (*idx)->scrub(pos, 7);
      ASSERT_TRUE(found);
      ASSERT_TRUE(found->empty()) << found->front();
      if (pos.table == 2 || pos.table == 3) in_chunks += 7;
    }
    ASSERT_FALSE(pos.done);
    GenXorb a = gen_xorb(40 + 2 * removed, 512), b = gen_xorb(41 + 2 * removed, 512);
    OwnedShard s = own(build_shard({.xorbs = {&a, &b}, .created = 1700000000 + removed}));
    auto r = (*idx)->remove(s.hash, 1800000000);
    ASSERT_TRUE(r) << r.error().to_string();
    while (!pos.done) {
      auto found = (*idx)->scrub(pos, 7);
      ASSERT_TRUE(found) << found.error().to_string();
      ASSERT_TRUE(found->empty()) << "shard " << removed << " removed: " << found->front();
    }
  }
}

// A write under way goes first: a slice that finds the writer's lock held
// checks nothing and keeps its place, and the pass goes on once the write
// is done. The write held here is the scope upgrade, which asks for a
// shard's scope from inside its transaction; the slice runs on another
// thread, as the daemon's work loop does beside a purge from an HTTP thread.
TEST(Scrub, ASliceGivesWayToAWriteUnderWay) {
  TempDir dir;
  fill(dir.path());
  auto idx = Index::open(Options{.dir = dir.path()});
  ASSERT_TRUE(idx);
  GenXorb a = gen_xorb(60, 512);
  OwnedShard s = own(build_shard({.xorbs = {&a}, .created = 1700000100}));
  ASSERT_TRUE((*idx)->ingest(*s.view, SourceInfo{.path = "/watched/unscoped.mdb"}, IngestOptions{}));

  Index::ScrubPosition pos;
  bool asked = false, slice_ok = false, slice_found = true;
  auto st = (*idx)->scope_unknown_shards([&](const std::string&) {
    asked = true;
    std::thread slice([&] {
      auto found = (*idx)->scrub(pos, 4096);
      slice_ok = bool(found);
      slice_found = found && !found->empty();
    });
    slice.join();
    return std::string{};
  });
  ASSERT_TRUE(st) << st.error().to_string();
  ASSERT_TRUE(asked) << "the write under way never asked: the test holds no write";
  EXPECT_TRUE(slice_ok);
  EXPECT_FALSE(slice_found);
  EXPECT_EQ(pos.items, 0u) << "a slice ran beside the write";
  EXPECT_FALSE(pos.done);
  EXPECT_FALSE(pos.resume);

  while (!pos.done) {
    auto found = (*idx)->scrub(pos, 4096);
    ASSERT_TRUE(found) << found.error().to_string();
    ASSERT_TRUE(found->empty()) << found->front();
  }
  EXPECT_GT(pos.items, 3u * 1024) << "the pass goes on once the write is done";
}

TEST(Scrub, AChunkEntryOfAMissingXorbIsFound) {
  TempDir dir;
  fill(dir.path());
  {
    // The xorb records deleted behind the index's back.
    RawIndex raw(dir.path(), true);
    MDB_dbi xorbs;
    ASSERT_EQ(mdb_dbi_open(raw.txn(), "xorbs", 0, &xorbs), 0);
    ASSERT_EQ(mdb_drop(raw.txn(), xorbs, 0), 0);
    ASSERT_EQ(raw.commit(), 0);
  }
  auto idx = Index::open(Options{.dir = dir.path()});
  ASSERT_TRUE(idx);
  Index::ScrubPosition pos;
  std::vector<std::string> problems;
  while (!pos.done) {
    auto found = (*idx)->scrub(pos, 4096);
    ASSERT_TRUE(found);
    problems.insert(problems.end(), found->begin(), found->end());
    if (!problems.empty()) break;
  }
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(problems.front().find("orphan chunk entry"), std::string::npos) << problems.front();
}

}  // namespace
}  // namespace dedupd::index::gen
