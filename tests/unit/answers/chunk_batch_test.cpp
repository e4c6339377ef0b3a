// A batch answered block by block over a real index and a fake fleet: each
// block merged local first, its misses asked once, the next blocks looked up
// ahead (never more than two), a block asked ahead of a busy pool asked
// again in turn rather than marked unavailable.
#include "daemon/answers/chunk_batch.hpp"

#include "answers_test_support.hpp"

namespace dedupd::daemon::answers {
namespace {

namespace st = shard::testing;
using testing::AnswersTest;

class ChunkBatch : public AnswersTest {
 protected:
  void SetUp() override {
    AnswersTest::SetUp();
    here_ = st::make_xorb(1, 6);
    ingest({here_});
    for (std::uint64_t s = 0; s < 6; ++s) fleet_only_.push_back(st::seeded_hash(9000 + s));
    sources_.fake_fleet.known_chunks = {fleet_only_.begin(), fleet_only_.end()};
  }

  // Hands out `blocks` in order, then the end; counts the blocks read.
  ChunkBlocks::NextHashes blocks_of(std::vector<std::vector<shard::Hash>> blocks) {
    auto all = std::make_shared<std::vector<std::vector<shard::Hash>>>(std::move(blocks));
    return [this, all]() -> base::Result<std::span<const shard::Hash>> {
      std::size_t i = reads_++;
      if (i < all->size()) return std::span<const shard::Hash>((*all)[i]);
      return std::span<const shard::Hash>();
    };
  }

  // Three blocks: each a chunk found here, one the fleet has, one nobody has.
  std::vector<std::vector<shard::Hash>> three_blocks() const {
    return {{here_.raw[0], fleet_only_[0], st::seeded_hash(1)},
            {fleet_only_[1], here_.raw[1], st::seeded_hash(2)},
            {st::seeded_hash(3), fleet_only_[2], here_.raw[2]}};
  }

  st::TestXorb here_;
  std::vector<shard::Hash> fleet_only_;
  std::size_t reads_ = 0;
};

TEST_F(ChunkBatch, BlocksComeInOrderEachMergedLocalFirstItsMissesAskedOnce) {
  const auto blocks = three_blocks();
  ChunkBlocks answer(lookups(), blocks_of(blocks));
  std::vector<std::vector<shard::Hash>> asked;
  for (const auto& block : blocks) {
    ChunkBlock b = answer.next();
    ASSERT_FALSE(b.error);
    EXPECT_EQ(b.hashes, block);
    EXPECT_EQ(b.remote.reach, Reach::answered);
    EXPECT_EQ(b.hits(), 2u);
    for (std::size_t i = 0; i < b.hashes.size(); ++i) {
      const bool here = b.hashes[i] == here_.raw[0] || b.hashes[i] == here_.raw[1] || b.hashes[i] == here_.raw[2];
      const bool fleet = sources_.fake_fleet.known_chunks.contains(b.hashes[i]);
      EXPECT_EQ(b.found(i), here || fleet) << i;
      EXPECT_EQ(b.local.of(i).size(), here ? 1u : 0u) << i;
      ASSERT_EQ(b.remote.of(std::uint32_t(i)).size(), fleet ? 1u : 0u) << i;
      if (here) {
        EXPECT_EQ(b.local.of(i)[0].xorb, here_.record.header.xorb_hash);
      }
      if (fleet) {
        EXPECT_EQ(b.remote.of(std::uint32_t(i))[0].xorb, b.hashes[i]);
      }
    }
    std::vector<shard::Hash> misses;
    for (const auto& h : block)
      if (h != here_.raw[0] && h != here_.raw[1] && h != here_.raw[2]) misses.push_back(h);
    asked.push_back(misses);
    // The memory bound: the block handed out and two looked up ahead.
    EXPECT_LE(reads_, asked.size() + 2);
  }
  EXPECT_TRUE(answer.next().hashes.empty()) << "the end";
  EXPECT_EQ(answer.reach(), Reach::answered);
  auto asks = sources_.fake_fleet.chunk_asks();
  std::sort(asks.begin(), asks.end());  // blocks asked ahead answer in any order
  std::sort(asked.begin(), asked.end());
  EXPECT_EQ(asks, asked);
}

TEST_F(ChunkBatch, TheNextTwoBlocksAreLookedUpWhileOneIsWritten) {
  ChunkBlocks answer(lookups(), blocks_of(three_blocks()));
  answer.next();
  EXPECT_EQ(reads_, 3u) << "the first block, then two ahead";
}

TEST_F(ChunkBatch, ABlockAskedAheadOfABusyPoolIsAskedInTurnNotMarkedUnavailable) {
  sources_.fake_fleet.busy_for = 2;  // both blocks asked ahead find every connection lent out
  ChunkBlocks answer(lookups(), blocks_of(three_blocks()));
  for (int i = 0; i < 3; ++i) {
    ChunkBlock b = answer.next();
    ASSERT_EQ(b.hashes.size(), 3u);
    EXPECT_EQ(b.remote.reach, Reach::answered) << "block " << i;
    EXPECT_EQ(b.hits(), 2u) << "block " << i;
  }
  EXPECT_EQ(sources_.fake_fleet.busy_for, 0) << "both were asked ahead first";
  EXPECT_EQ(sources_.fake_fleet.chunk_asks().size(), 3u);
  EXPECT_EQ(answer.reach(), Reach::answered);
}

TEST_F(ChunkBatch, AnUnavailableFleetMarksTheWholeAnswerAndStopsLookingAhead) {
  sources_.fake_fleet.unavailable_for = 1;
  ChunkBlocks answer(lookups(), blocks_of(three_blocks()));
  ChunkBlock first = answer.next();
  EXPECT_EQ(first.remote.reach, Reach::unavailable);
  EXPECT_EQ(first.hits(), 1u) << "the local hit stands";
  EXPECT_EQ(reads_, 1u) << "no block asked ahead of a fleet that does not answer";
  ChunkBlock second = answer.next();
  EXPECT_EQ(second.remote.reach, Reach::answered);
  answer.next();
  EXPECT_TRUE(answer.next().hashes.empty());
  EXPECT_EQ(answer.reach(), Reach::unavailable) << "once any block was";
}

TEST_F(ChunkBatch, LocalOnlyNeverAsksTheFleet) {
  ChunkBlocks answer(lookups(Lookups::Scope::local_only), blocks_of(three_blocks()));
  for (int i = 0; i < 3; ++i) {
    ChunkBlock b = answer.next();
    EXPECT_EQ(b.remote.reach, Reach::off);
    EXPECT_EQ(b.hits(), 1u);
  }
  EXPECT_TRUE(answer.next().hashes.empty());
  EXPECT_TRUE(sources_.fake_fleet.chunk_asks().empty());
  EXPECT_EQ(answer.reach(), Reach::off);
}

TEST_F(ChunkBatch, ASpoolThatFailsEndsTheAnswerWithItsError) {
  const auto blocks = three_blocks();
  ChunkBlocks answer(lookups(), [&, n = 0]() mutable -> base::Result<std::span<const shard::Hash>> {
    if (n++ == 0) return std::span<const shard::Hash>(blocks[0]);
    return base::Error{"spool.read", 0, "the spool file went away", false};
  });
  ChunkBlock first = answer.next();
  EXPECT_FALSE(first.error);
  EXPECT_EQ(first.hashes, blocks[0]);
  ChunkBlock second = answer.next();
  ASSERT_TRUE(second.error);
  EXPECT_EQ(second.error->rule, "spool.read");
}

}  // namespace
}  // namespace dedupd::daemon::answers
