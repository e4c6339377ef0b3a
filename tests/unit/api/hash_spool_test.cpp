// The spool a streamed batch waits in: the first block in memory, the rest
// in a temporary file, read back in order a block at a time.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "daemon/api/http/hash_spool.hpp"

namespace dedupd::daemon::api::http {
namespace {

shard::Hash numbered(std::uint64_t i) {
  shard::Hash h;
  std::memcpy(h.bytes.data(), &i, sizeof i);
  h.bytes[31] = 0x5A;
  return h;
}

std::vector<shard::Hash> read_all(HashSpool& spool, std::size_t* blocks) {
  std::vector<shard::Hash> out;
  *blocks = 0;
  for (;;) {
    auto block = spool.next();
    EXPECT_TRUE(block.ok()) << block.error().message;
    if (!block.ok() || block->empty()) break;
    EXPECT_LE(block->size(), HashSpool::kBlockHashes);
    out.insert(out.end(), block->begin(), block->end());
    ++*blocks;
  }
  return out;
}

TEST(HashSpool, ASmallBatchStaysInOneBlock) {
  HashSpool spool("/nonexistent-dir-never-used");
  for (std::uint64_t i = 0; i < 100; ++i) ASSERT_TRUE(spool.put(numbered(i)));
  std::size_t blocks = 0;
  auto got = read_all(spool, &blocks);
  ASSERT_EQ(got.size(), 100u);
  EXPECT_EQ(blocks, 1u);
  EXPECT_EQ(got[99], numbered(99));
}

TEST(HashSpool, ALargeBatchSpillsAndComesBackInOrder) {
  HashSpool spool;
  const std::uint64_t n = 3 * HashSpool::kBlockHashes + 17;
  for (std::uint64_t i = 0; i < n; ++i) ASSERT_TRUE(spool.put(numbered(i))) << spool.error();
  EXPECT_EQ(spool.size(), n);
  std::size_t blocks = 0;
  auto got = read_all(spool, &blocks);
  ASSERT_EQ(got.size(), n);
  EXPECT_EQ(blocks, 4u);
  for (std::uint64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], numbered(i)) << i;
}

TEST(HashSpool, NoRoomForTheFileIsAnErrorNamingTheDirectory) {
  HashSpool spool("/nonexistent-dir-for-spool");
  bool ok = true;
  for (std::uint64_t i = 0; ok && i <= HashSpool::kBlockHashes; ++i) ok = spool.put(numbered(i));
  EXPECT_FALSE(ok);
  EXPECT_NE(spool.error().find("/nonexistent-dir-for-spool"), std::string::npos) << spool.error();
}

}  // namespace
}  // namespace dedupd::daemon::api::http
