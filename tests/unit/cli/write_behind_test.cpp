// WriteBehind on a real file: what it drops is out of the page cache and
// still on disk, the newest window stays, a small answer is left whole, and
// a pipe is left alone. Residency is read with mincore(2) over a mapping of
// the file.
#include "cli/write_behind.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/temp_dir.hpp"

namespace dedupctl {
namespace {

constexpr std::size_t kPiece = 256 << 10;  // what query_stream flushes at a time

// Writes `bytes` in pieces, calling wrote() after each as query_stream does;
// piece k is filled with the byte k % 251 so the content can be checked.
void write_through(int fd, WriteBehind& behind, std::uint64_t bytes) {
  std::vector<char> piece(kPiece);
  for (std::uint64_t k = 0; k * kPiece < bytes; ++k) {
    std::memset(piece.data(), int(k % 251), piece.size());
    ASSERT_EQ(::write(fd, piece.data(), piece.size()), ssize_t(piece.size()));
    behind.wrote();
  }
}

// Per page of [from, to): resident in the page cache or not.
std::vector<unsigned char> residency(int fd, std::uint64_t size) {
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  EXPECT_NE(map, MAP_FAILED);
  const long page = ::sysconf(_SC_PAGESIZE);
  std::vector<unsigned char> v((size + std::uint64_t(page) - 1) / std::uint64_t(page));
  EXPECT_EQ(::mincore(map, size, v.data()), 0) << std::strerror(errno);
  ::munmap(map, size);
  return v;
}

std::uint64_t resident_in(const std::vector<unsigned char>& pages, std::uint64_t from, std::uint64_t to) {
  const auto page = std::uint64_t(::sysconf(_SC_PAGESIZE));
  std::uint64_t n = 0;
  for (std::uint64_t p = from / page; p < to / page; ++p) n += pages[p] & 1;
  return n * page;
}

class WriteBehindTest : public ::testing::Test {
 protected:
  void SetUp() override {
    struct statfs fs {};
    ASSERT_EQ(::statfs(dir_.path().c_str(), &fs), 0);
    // tmpfs pages are the file itself: there is no disk to drop them to.
    if (fs.f_type == TMPFS_MAGIC) GTEST_SKIP() << dir_.path() << " is on tmpfs; set TMPDIR to a disk";
    fd_ = ::open((dir_ / "answer.jsonl").c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ASSERT_GE(fd_, 0);
  }
  void TearDown() override {
    if (fd_ >= 0) ::close(fd_);
  }
  dedupd::tests::TempDir dir_{"write-behind"};
  int fd_ = -1;
};

TEST_F(WriteBehindTest, DropsWhatIsOnDiskAndKeepsTheNewestWindow) {
  constexpr std::uint64_t kWindow = WriteBehind::kWindowBytes;
  const std::uint64_t size = WriteBehind::kKeepBytes + 4 * kWindow;
  WriteBehind behind(fd_);
  write_through(fd_, behind, size);

  // All but the newest window (and the one being written back behind it).
  EXPECT_GE(behind.dropped(), size - 2 * kWindow);
  const auto pages = residency(fd_, size);
  EXPECT_EQ(resident_in(pages, 0, behind.dropped()), 0u) << "dropped pages are still cached";
  EXPECT_EQ(resident_in(pages, size - kWindow, size), kWindow) << "the newest window was dropped";

  // Dropped from memory, not lost: every piece reads back as written.
  std::vector<char> piece(kPiece);
  for (std::uint64_t k = 0; k * kPiece < size; ++k) {
    ASSERT_EQ(::pread(fd_, piece.data(), kPiece, off_t(k * kPiece)), ssize_t(kPiece));
    ASSERT_EQ(piece.front(), char(k % 251));
    ASSERT_EQ(piece.back(), char(k % 251));
  }
}

TEST_F(WriteBehindTest, LeavesAnAnswerUnderTheKeepSizeCachedWhole) {
  const std::uint64_t size = WriteBehind::kKeepBytes - WriteBehind::kWindowBytes;
  WriteBehind behind(fd_);
  write_through(fd_, behind, size);
  EXPECT_EQ(behind.dropped(), 0u);
  EXPECT_EQ(resident_in(residency(fd_, size), 0, size), size);
}

TEST_F(WriteBehindTest, CountsFromWhereTheOutputStarts) {
  // Appending to a file that holds earlier output: that output is not this
  // answer's to drop, and the keep size counts from the offset it starts at.
  const std::uint64_t before = WriteBehind::kKeepBytes;
  WriteBehind earlier(-1);
  write_through(fd_, earlier, before);
  WriteBehind behind(fd_);
  write_through(fd_, behind, WriteBehind::kKeepBytes - WriteBehind::kWindowBytes);
  EXPECT_EQ(behind.dropped(), 0u);
  EXPECT_EQ(resident_in(residency(fd_, before), 0, before), before);
}

TEST(WriteBehind, LeavesAPipeAlone) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
  WriteBehind behind(p[1]);
  char buf[4096] = {};
  ASSERT_EQ(::write(p[1], buf, sizeof buf), ssize_t(sizeof buf));
  behind.wrote();
  EXPECT_EQ(behind.dropped(), 0u);
  ::close(p[0]);
  ::close(p[1]);
}

}  // namespace
}  // namespace dedupctl
