// Which source answers a global-dedup question: this index first, the fleet
// for a chunk it lacks (never a shard set aside here or marked in the
// fleet), under the settings of the daemon's key and of the asker.
#include "daemon/answers/global_dedup.hpp"

#include "answers_test_support.hpp"
#include "shard/reader.hpp"

namespace dedupd::daemon::answers {
namespace {

namespace st = shard::testing;
using testing::AnswersTest;
using testing::kNow;

// A fleet shard of `xorbs`, raw.
fleet::ShardXorbs fleet_shard(std::uint64_t seed, const std::vector<st::TestXorb>& xorbs) {
  fleet::ShardXorbs s{st::seeded_hash(seed), std::nullopt, std::nullopt, {}};
  for (const auto& x : xorbs) {
    shard::ShardWriter w;
    w.add_xorb(x.record);
    auto bytes = w.write({});
    auto view = shard::ShardView::parse(bytes);
    EXPECT_TRUE(view.ok());
    for (auto block : view->xorbs())
      s.xorbs.push_back({x.record.header.xorb_hash, {block.raw().begin(), block.raw().end()}});
  }
  return s;
}

class GlobalDedupQuestions : public AnswersTest {
 protected:
  void SetUp() override {
    AnswersTest::SetUp();
    sources_.key.reply_lifetime_s = 3600;
    sources_.key.endpoint_reply_lifetime_s = 5;
  }
};

TEST_F(GlobalDedupQuestions, AChunkFoundHereIsAnsweredHereRekeyedWithTheDaemonsKey) {
  st::TestXorb x = st::make_xorb(1, 4);
  ingest({x});
  sources_.fake_fleet.source_candidates = {fleet_shard(50, {st::make_xorb(2, 4)})};
  auto answer = answer_global_dedup(lookups(), {x.raw[1]}, kNow);
  ASSERT_TRUE(answer.ok()) << answer.error().to_string();
  ASSERT_TRUE(answer->reply);
  EXPECT_EQ(answer->fleet, Reach::off) << "not asked";
  EXPECT_EQ(sources_.fake_fleet.other_asks, 0);
  const GlobalDedupReply& r = *answer->reply;
  ASSERT_EQ(r.xorbs.size(), 1u);
  EXPECT_EQ(r.xorbs[0].header.xorb_hash, x.record.header.xorb_hash);
  EXPECT_EQ(r.xorbs[0].chunks[1].chunk_hash, x.raw[1]) << "as stored: render keys them";
  EXPECT_TRUE(r.rekey);
  EXPECT_EQ(r.key, sources_.key.key);
  EXPECT_EQ(r.created, kNow);
  EXPECT_EQ(r.expiry, kNow + 3600);

  answer = answer_global_dedup(lookups(), {x.raw[1], true}, kNow);
  ASSERT_TRUE(answer.ok() && answer->reply);
  EXPECT_EQ(answer->reply->expiry, kNow + 5) << "the endpoint's clients: its own lifetime";
}

TEST_F(GlobalDedupQuestions, AChunkThisIndexLacksComesFromTheFleetWithinTheReplysBounds) {
  st::TestXorb own = st::make_xorb(3, 5), after = st::make_xorb(4, 2);
  sources_.fake_fleet.source_candidates = {fleet_shard(51, {own, after})};
  sources_.key.reply_max_xorbs = 7;
  sources_.key.reply_max_bytes = 1 << 20;
  auto answer = answer_global_dedup(lookups(), {own.raw[0]}, kNow);
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(answer->fleet, Reach::answered);
  ASSERT_TRUE(answer->reply);
  ASSERT_EQ(answer->reply->xorbs.size(), 2u);
  EXPECT_EQ(answer->reply->xorbs[0].header.xorb_hash, own.record.header.xorb_hash);
  EXPECT_TRUE(answer->reply->rekey);
  EXPECT_EQ(answer->reply->key, sources_.key.key);
  auto bounds = fleet_source_bounds({7, 1 << 20});
  ASSERT_TRUE(sources_.fake_fleet.source_bounds);
  EXPECT_EQ(sources_.fake_fleet.source_bounds->max_xorbs, bounds.max_xorbs);
  EXPECT_EQ(sources_.fake_fleet.source_bounds->max_block_bytes, bounds.max_block_bytes);
  EXPECT_EQ(sources_.fake_fleet.source_now, std::optional(kNow));
  EXPECT_FALSE(sources_.fake_fleet.source_scope) << "no CAS named: any shard";

  answer = answer_global_dedup(lookups(Lookups::Scope::local_only), {own.raw[0]}, kNow);
  ASSERT_TRUE(answer.ok());
  EXPECT_FALSE(answer->reply);
  EXPECT_EQ(answer->fleet, Reach::off);
  EXPECT_EQ(sources_.fake_fleet.other_asks, 1) << "local only: not asked";
}

TEST_F(GlobalDedupQuestions, ANamedCasScopesBothHalves) {
  st::TestXorb x = st::make_xorb(5, 3);
  ingest({x}, "https://cas-a.example");
  GlobalDedupQuestion question{x.raw[0], false, "https://cas-b.example"};
  auto answer = answer_global_dedup(lookups(), question, kNow);
  ASSERT_TRUE(answer.ok());
  EXPECT_FALSE(answer->reply) << "this index's shard is another CAS's";
  EXPECT_EQ(answer->fleet, Reach::answered) << "so the fleet was asked";
  ASSERT_TRUE(sources_.fake_fleet.source_scope);
  EXPECT_EQ(sources_.fake_fleet.source_scope->cas, "https://cas-b.example");
  EXPECT_FALSE(sources_.fake_fleet.source_scope->unknown_too);

  sources_.key.unknown_cas_answers = true;
  ASSERT_TRUE(answer_global_dedup(lookups(), question, kNow).ok());
  EXPECT_TRUE(sources_.fake_fleet.source_scope->unknown_too);
  question.cas = "https://cas-a.example";
  answer = answer_global_dedup(lookups(), question, kNow);
  ASSERT_TRUE(answer.ok());
  EXPECT_TRUE(answer->reply);
}

TEST_F(GlobalDedupQuestions, AShardSetAsideHereOrMarkedInTheFleetIsNoFleetSource) {
  st::TestXorb x = st::make_xorb(6, 3);
  const shard::Hash here = ingest({x});
  ASSERT_TRUE(index_->set_aside(here, "the CAS refused it", kNow));
  fleet::ShardXorbs set_aside_here = fleet_shard(0, {x});
  set_aside_here.shard = here;
  fleet::ShardXorbs marked = fleet_shard(52, {x}), clean = fleet_shard(53, {x});
  sources_.fake_fleet.source_candidates = {set_aside_here, marked, clean};
  sources_.fake_fleet.marks = {{marked.shard, std::optional<std::string>("https://cas-a.example")}};

  auto answer = answer_global_dedup(lookups(), {x.raw[0], false, "https://cas-a.example"}, kNow);
  ASSERT_TRUE(answer.ok());
  EXPECT_TRUE(answer->reply) << "from the clean shard";
  EXPECT_EQ(sources_.fake_fleet.excluded, (std::vector<shard::Hash>{here, marked.shard}));

  // A mark for another CAS does not exclude it for this one.
  sources_.fake_fleet.excluded.clear();
  ASSERT_TRUE(answer_global_dedup(lookups(), {x.raw[0], false, "https://cas-b.example"}, kNow).ok());
  EXPECT_EQ(sources_.fake_fleet.excluded, (std::vector<shard::Hash>{here}));
}

TEST_F(GlobalDedupQuestions, AFleetThatDoesNotAnswerGivesNoReplyAndSaysSo) {
  st::TestXorb x = st::make_xorb(7, 3);
  sources_.fake_fleet.source_candidates = {fleet_shard(54, {x})};
  sources_.fake_fleet.reach = Reach::unavailable;
  auto answer = answer_global_dedup(lookups(), {x.raw[0]}, kNow);
  ASSERT_TRUE(answer.ok());
  EXPECT_FALSE(answer->reply);
  EXPECT_EQ(answer->fleet, Reach::unavailable);
}

}  // namespace
}  // namespace dedupd::daemon::answers
