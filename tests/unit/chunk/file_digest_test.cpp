// One pass over a file (chunk/file_digest): the chunks it reports, the file
// hash and the sha256 (read on the second thread) all match the oracle; a
// file that cannot be opened or read is an error naming the step.
#include "chunk/file_digest.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "chunk_vectors.hpp"

namespace dedupd::chunk {
namespace {

using testing::cases;
using testing::expect_matches;
using testing::kInMemory;
using testing::Outcome;
using testing::SeededBytes;

// digest_file over a real file: the chunks it reports, the file hash and
// the sha256 (read on the second thread) all match the oracle.
class TempFile {
 public:
  explicit TempFile(const std::vector<std::uint8_t>& bytes) {
    path_ = std::filesystem::temp_directory_path() /
            ("chunk_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    std::ofstream f(path_, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  }
  ~TempFile() { std::filesystem::remove(path_); }
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

TEST(DigestFile, MatchesTheVectors) {
  for (const auto& c : cases()) {
    if (c.size > kInMemory) continue;
    SeededBytes gen(c.gen);
    TempFile f(gen.take(c.size));
    for (std::size_t block : {std::size_t(4096), std::size_t(65536 + 7), std::size_t(4 << 20)}) {
      SCOPED_TRACE(c.name + ", block " + std::to_string(block));
      std::vector<ChunkRecord> seen;
      std::uint64_t progress = 0;
      DigestOptions opt;
      opt.block_size = block;
      opt.on_chunks = [&](std::span<const ChunkRecord> r) { seen.insert(seen.end(), r.begin(), r.end()); };
      opt.on_progress = [&](std::uint64_t done) {
        EXPECT_GE(done, progress);
        progress = done;
      };
      auto d = digest_file(f.path(), opt);
      ASSERT_TRUE(d) << d.error().to_string();
      EXPECT_EQ(d->size, c.size);
      EXPECT_EQ(d->chunks, c.chunks.size());
      EXPECT_EQ(d->file_hash.to_string(), c.file_hash);
      EXPECT_EQ(d->sha256.to_hex_bytes(), c.sha256);
      EXPECT_EQ(progress, c.size);
      Outcome o{seen, d->file_hash};
      expect_matches(c, o, "digest_file");
    }
  }
}

TEST(DigestFile, WithoutSha256) {
  const auto& c = cases().back();
  SeededBytes gen(c.gen);
  TempFile f(gen.take(1 << 20));
  DigestOptions opt;
  opt.sha256 = false;
  auto d = digest_file(f.path(), opt);
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->sha256.is_zero());
  EXPECT_EQ(d->size, 1u << 20);
}

TEST(DigestFile, MissingFileIsAnError) {
  auto d = digest_file("/nonexistent/dir/file");
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().rule, "open");
}

TEST(DigestFile, DirectoryIsAReadError) {
  auto d = digest_file(std::filesystem::temp_directory_path().string());
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().rule, "read");
}

TEST(DigestFile, AnEmptyFileIsNoChunkAndTheZeroFileHash) {
  TempFile f({});
  int calls = 0;
  DigestOptions opt;
  opt.on_chunks = [&](std::span<const ChunkRecord> r) { calls += r.empty() ? 0 : 1; };
  auto d = digest_file(f.path(), opt);
  ASSERT_TRUE(d) << d.error().to_string();
  EXPECT_EQ(d->size, 0u);
  EXPECT_EQ(d->chunks, 0u);
  EXPECT_TRUE(d->file_hash.is_zero());
  EXPECT_EQ(d->sha256.to_hex_bytes(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(calls, 0);
}

TEST(DigestFile, AFileDescriptorIsReadToItsEndAndLeftOpen) {
  const auto& c = cases().back();
  SeededBytes gen(c.gen);
  const auto bytes = gen.take(300'000);
  TempFile f(bytes);
  const int fd = ::open(f.path().c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::lseek(fd, 100'000, SEEK_SET), 100'000);
  auto from_fd = digest_fd(fd);
  ASSERT_TRUE(from_fd) << from_fd.error().to_string();
  // From where the descriptor stood, as a file of the rest would give.
  EXPECT_EQ(from_fd->size, 200'000u);
  TempFile rest(std::vector<std::uint8_t>(bytes.begin() + 100'000, bytes.end()));
  auto whole = digest_file(rest.path());
  ASSERT_TRUE(whole);
  EXPECT_EQ(from_fd->file_hash, whole->file_hash);
  EXPECT_EQ(from_fd->sha256, whole->sha256);
  EXPECT_EQ(from_fd->chunks, whole->chunks);
  EXPECT_EQ(::lseek(fd, 0, SEEK_CUR), 300'000) << "the caller's descriptor, still open";
  ::close(fd);
}

}  // namespace
}  // namespace dedupd::chunk
