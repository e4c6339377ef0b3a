// digest_fd's two threads (the reader chunks and hashes, the other runs
// sha256 over the same blocks): with many small blocks and few slots the
// hand-over happens thousands of times, and the result must equal the
// single-threaded computation. Run under ThreadSanitizer by ./dev test
// (ctest label concurrency).
#include <gtest/gtest.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include "chunk/chunk_hasher.hpp"
#include "chunk/file_digest.hpp"
#include "chunk/sha256.hpp"
#include "seeded_bytes.hpp"

namespace dedupd::chunk {
namespace {

struct Reference {
  std::vector<ChunkRecord> chunks;
  shard::Hash file_hash, sha256;
};

Reference reference_of(const std::vector<std::uint8_t>& bytes) {
  Reference r;
  ChunkHasher h;
  h.update(bytes, r.chunks);
  r.file_hash = h.finish(r.chunks);
  Sha256 s;
  s.update(bytes);
  r.sha256 = *s.finish();
  return r;
}

// Writes bytes into a pipe from another thread; digest_fd reads the other end.
base::Result<FileDigest> digest_through_pipe(const std::vector<std::uint8_t>& bytes, const DigestOptions& opt) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  std::thread writer([&] {
    std::size_t at = 0;
    while (at < bytes.size()) {
      const ssize_t n = ::write(fds[1], bytes.data() + at, std::min<std::size_t>(bytes.size() - at, 3000));
      if (n <= 0) break;
      at += std::size_t(n);
    }
    ::close(fds[1]);
  });
  auto d = digest_fd(fds[0], opt);
  writer.join();
  ::close(fds[0]);
  return d;
}

TEST(DigestConcurrency, SmallBlocksFewSlotsGiveTheSingleThreadedResult) {
  testing::Generator g;
  g.kind = "mixed";
  g.seed = 31;
  g.run = 50000;
  testing::SeededBytes gen(g);
  const auto bytes = gen.take(3 << 20);
  const Reference ref = reference_of(bytes);
  for (std::size_t slots : {2, 3, 8}) {
    for (std::size_t block : {4096, 10007}) {
      SCOPED_TRACE("slots " + std::to_string(slots) + ", block " + std::to_string(block));
      DigestOptions opt;
      opt.block_size = block;
      opt.blocks = slots;
      std::vector<ChunkRecord> seen;
      opt.on_chunks = [&](std::span<const ChunkRecord> r) { seen.insert(seen.end(), r.begin(), r.end()); };
      auto d = digest_through_pipe(bytes, opt);
      ASSERT_TRUE(d) << d.error().to_string();
      EXPECT_EQ(d->size, bytes.size());
      EXPECT_EQ(d->file_hash, ref.file_hash);
      EXPECT_EQ(d->sha256, ref.sha256);
      ASSERT_EQ(seen.size(), ref.chunks.size());
      for (std::size_t i = 0; i < seen.size(); ++i) {
        EXPECT_EQ(seen[i].hash, ref.chunks[i].hash) << i;
        EXPECT_EQ(seen[i].size, ref.chunks[i].size) << i;
      }
    }
  }
}

TEST(DigestConcurrency, ReadErrorStopsTheSecondThreadCleanly) {
  // A directory cannot be read: the error comes back and the sha256 thread
  // is joined (ThreadSanitizer would see it left running).
  for (int i = 0; i < 20; ++i) {
    auto d = digest_file(::testing::TempDir());
    ASSERT_FALSE(d);
    EXPECT_EQ(d.error().rule, "read");
  }
}

}  // namespace
}  // namespace dedupd::chunk
