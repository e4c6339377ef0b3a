// One chunk's answer, and the lookups every answer takes: the index as it is
// open now, the fleet only for what it lacks and only when the question may
// go beyond this host.
#include "daemon/answers/chunk.hpp"

#include "answers_test_support.hpp"

namespace dedupd::daemon::answers {
namespace {

namespace st = shard::testing;
using testing::AnswersTest;
using testing::kNow;

TEST_F(AnswersTest, NoLookupsWhileTheIndexIsNotOpen) {
  sources_.open_index = nullptr;
  EXPECT_FALSE(Lookups::open(sources_).has_value());
  EXPECT_FALSE(Lookups::open(sources_, Lookups::Scope::local_only).has_value());
}

TEST_F(AnswersTest, LocalOnlyLookupsHaveNoFleetToAsk) {
  EXPECT_EQ(&lookups().index(), index_.get());
  EXPECT_EQ(lookups().fleet(), &sources_.fake_fleet);
  EXPECT_EQ(lookups(Lookups::Scope::local_only).fleet(), nullptr);
}

TEST_F(AnswersTest, AChunkFoundHereIsNotAskedOfTheFleet) {
  st::TestXorb x = st::make_xorb(1, 4);
  ingest({x});
  auto answer = answer_chunk(lookups(), x.raw[2]);
  ASSERT_TRUE(answer.ok()) << answer.error().to_string();
  EXPECT_TRUE(answer->found());
  ASSERT_EQ(answer->local.size(), 1u);
  EXPECT_EQ(answer->local[0].xorb, x.record.header.xorb_hash);
  EXPECT_EQ(answer->local[0].chunk_index, 2u);
  EXPECT_EQ(answer->remote.reach, Reach::off);
  EXPECT_TRUE(sources_.fake_fleet.chunk_asks().empty());
}

TEST_F(AnswersTest, AChunkMissedHereIsAskedOfTheFleetAlone) {
  const shard::Hash elsewhere = st::seeded_hash(4321);
  sources_.fake_fleet.known_chunks = {elsewhere};
  auto answer = answer_chunk(lookups(), elsewhere);
  ASSERT_TRUE(answer.ok());
  EXPECT_TRUE(answer->found());
  EXPECT_TRUE(answer->local.empty());
  ASSERT_EQ(answer->fleet_locations().size(), 1u);
  EXPECT_EQ(answer->fleet_locations()[0].xorb, elsewhere);
  EXPECT_EQ(answer->remote.reach, Reach::answered);
  EXPECT_EQ(sources_.fake_fleet.chunk_asks(), (std::vector<std::vector<shard::Hash>>{{elsewhere}}));
  EXPECT_TRUE(answer->expired.empty());

  auto local = answer_chunk(lookups(Lookups::Scope::local_only), elsewhere);
  ASSERT_TRUE(local.ok());
  EXPECT_FALSE(local->found());
  EXPECT_EQ(local->remote.reach, Reach::off);
  EXPECT_EQ(sources_.fake_fleet.chunk_asks().size(), 1u) << "not asked again";
}

TEST_F(AnswersTest, AChunkNobodyHasSaysWhichExpiredShardsHeldIt) {
  st::TestXorb x = st::make_xorb(2, 3);
  const shard::Hash shard = ingest({x}, "", kNow + 60);
  auto answer = answer_chunk(lookups(), x.raw[0]);
  ASSERT_TRUE(answer.ok());
  EXPECT_TRUE(answer->expired.empty()) << "found: no hint";
  ASSERT_TRUE(index_->expire(kNow + 61).ok());
  answer = answer_chunk(lookups(), x.raw[0]);
  ASSERT_TRUE(answer.ok());
  EXPECT_FALSE(answer->found());
  ASSERT_EQ(answer->expired.size(), 1u);
  EXPECT_EQ(answer->expired[0].hash, shard);
  EXPECT_EQ(answer->remote.reach, Reach::answered) << "the fleet was asked and had none";
}

}  // namespace
}  // namespace dedupd::daemon::answers
