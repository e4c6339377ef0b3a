// The merge of a batch's two halves: only the local misses go to the fleet,
// in one round trip, and each fleet answer lands on its own query.
#include "daemon/answers/fleet_misses.hpp"

#include "answers_test_support.hpp"

namespace dedupd::daemon::answers {
namespace {

namespace st = shard::testing;
using testing::FakeFleet;

std::vector<shard::Hash> hashes(std::initializer_list<std::uint64_t> seeds) {
  std::vector<shard::Hash> out;
  for (auto s : seeds) out.push_back(st::seeded_hash(s));
  return out;
}

// A local answer where the queries in `hits` have one location each.
index::BatchResult local_hits(std::size_t queries, std::set<std::size_t> hits) {
  index::BatchResult r;
  r.first.push_back(0);
  r.shard_sets.push_back({});
  for (std::size_t i = 0; i < queries; ++i) {
    if (hits.contains(i)) r.locations.push_back({});
    r.first.push_back(std::uint32_t(r.locations.size()));
  }
  return r;
}

TEST(FleetMisses, OnlyTheLocalMissesAreAskedInOneRoundTripAndEachAnswerLandsOnItsQuery) {
  FakeFleet fleet;
  const auto raw = hashes({1, 2, 3, 4, 5});
  fleet.known_chunks = {raw[1], raw[4]};
  FleetMisses out;
  auto reach = ask_fleet_for_misses(fleet, raw, local_hits(raw.size(), {0, 2}), out, false);
  ASSERT_EQ(reach, std::optional(Reach::answered));
  EXPECT_EQ(out.reach, Reach::answered);
  EXPECT_EQ(fleet.chunk_asks(), (std::vector<std::vector<shard::Hash>>{{raw[1], raw[3], raw[4]}}));
  EXPECT_EQ(out.queries, (std::vector<std::uint32_t>{1, 3, 4}));
  EXPECT_TRUE(out.of(0).empty()) << "found here: not asked";
  ASSERT_EQ(out.of(1).size(), 1u);
  EXPECT_EQ(out.of(1)[0].xorb, raw[1]);
  EXPECT_TRUE(out.of(2).empty());
  EXPECT_TRUE(out.of(3).empty()) << "asked, the fleet has none";
  ASSERT_EQ(out.of(4).size(), 1u);
  EXPECT_EQ(out.of(4)[0].xorb, raw[4]);
  EXPECT_TRUE(out.of(5).empty()) << "past the batch";
}

TEST(FleetMisses, AQueryPastTheLocalAnswerIsAMiss) {
  FakeFleet fleet;
  const auto raw = hashes({6});
  fleet.known_chunks = {raw[0]};
  FleetMisses out;
  EXPECT_EQ(ask_fleet_for_misses(fleet, raw, {}, out, false), std::optional(Reach::answered));
  ASSERT_EQ(out.of(0).size(), 1u);
  EXPECT_EQ(out.of(0)[0].xorb, raw[0]);
}

TEST(FleetMisses, ABatchFoundWhollyHereAsksNothingAndIsAnswered) {
  FakeFleet fleet;
  const auto raw = hashes({1, 2});
  FleetMisses out;
  EXPECT_EQ(ask_fleet_for_misses(fleet, raw, local_hits(2, {0, 1}), out, false), std::optional(Reach::answered));
  EXPECT_TRUE(fleet.chunk_asks().empty());
  EXPECT_EQ(out.reach, Reach::answered);
}

TEST(FleetMisses, AFleetThatIsOffIsNotAskedAndMarksNothing) {
  FakeFleet fleet;
  fleet.on = false;
  FleetMisses out;
  EXPECT_EQ(ask_fleet_for_misses(fleet, hashes({1, 2}), {}, out, false), std::optional(Reach::off));
  EXPECT_TRUE(fleet.chunk_asks().empty());
  EXPECT_TRUE(out.queries.empty()) << "not even the misses are listed";
  EXPECT_EQ(out.reach, Reach::off);
}

TEST(FleetMisses, AnAnswerShortOfQueriesIsUnavailableAndGivesNoLocation) {
  FakeFleet fleet;
  fleet.answer_short = true;
  const auto raw = hashes({1, 2});
  fleet.known_chunks = {raw[0]};
  FleetMisses out;
  EXPECT_EQ(ask_fleet_for_misses(fleet, raw, {}, out, false), std::optional(Reach::unavailable));
  EXPECT_TRUE(out.of(0).empty());
}

TEST(FleetMisses, AskedAheadWhileEveryConnectionIsLentNothingIsAskedAndNoneSaidUnavailable) {
  FakeFleet fleet;
  fleet.busy_for = 1;
  const auto raw = hashes({1});
  fleet.known_chunks = {raw[0]};
  FleetMisses out;
  out.reach = Reach::unavailable;
  EXPECT_EQ(ask_fleet_for_misses(fleet, raw, {}, out, true), std::nullopt);
  EXPECT_EQ(out.reach, Reach::off);
  EXPECT_TRUE(out.queries.empty());
  EXPECT_TRUE(fleet.chunk_asks().empty());
  // In turn it waits for a connection instead (FleetLookup) and is answered.
  fleet.busy_for = 1;
  EXPECT_EQ(ask_fleet_for_misses(fleet, raw, {}, out, false), std::optional(Reach::answered));
  EXPECT_EQ(out.of(0).size(), 1u);
}

TEST(FleetMisses, AnAnswerOfManyPartsIsUnavailableOnceAnyPartWas) {
  EXPECT_EQ(combine_reach(Reach::off, Reach::off), Reach::off);
  EXPECT_EQ(combine_reach(Reach::off, Reach::answered), Reach::answered);
  EXPECT_EQ(combine_reach(Reach::answered, Reach::answered), Reach::answered);
  EXPECT_EQ(combine_reach(Reach::answered, Reach::unavailable), Reach::unavailable);
  EXPECT_EQ(combine_reach(Reach::unavailable, Reach::answered), Reach::unavailable);
  EXPECT_EQ(combine_reach(Reach::off, Reach::unavailable), Reach::unavailable);
}

}  // namespace
}  // namespace dedupd::daemon::answers
