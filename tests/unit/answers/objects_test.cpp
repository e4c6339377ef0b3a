// A xorb's, a file's and a sha256's answers: this index first, the fleet for
// what it lacks; a xorb described by its raw form when it has one.
#include "answers_test_support.hpp"
#include "daemon/answers/file.hpp"
#include "daemon/answers/sha256.hpp"
#include "daemon/answers/xorb.hpp"

namespace dedupd::daemon::answers {
namespace {

namespace st = shard::testing;
using testing::AnswersTest;

TEST_F(AnswersTest, AXorbStoredRawAndKeyedIsDescribedByItsRawFormFirst) {
  const shard::Key key = st::seeded_hash(31);
  ingest({st::make_xorb(3, 4, key)}, "", std::nullopt, key);
  ingest({st::make_xorb(3, 4)});
  const shard::Hash xorb = st::make_xorb(3, 4).record.header.xorb_hash;
  auto answer = answer_xorb(lookups(), xorb);
  ASSERT_TRUE(answer.ok()) << answer.error().to_string();
  ASSERT_TRUE(answer->found());
  ASSERT_EQ(answer->local.size(), 2u);
  EXPECT_FALSE(answer->local[answer->primary].keyed);
  EXPECT_EQ(sources_.fake_fleet.other_asks, 0) << "found here";
}

TEST_F(AnswersTest, AXorbThisIndexLacksIsTheFleetsRawFormFirst) {
  fleet::XorbAnswer remote{st::seeded_hash(40), {}};
  remote.forms.push_back({true, st::seeded_hash(41), {}, {}});
  remote.forms.push_back({false, {}, {}, {}});
  sources_.fake_fleet.xorb_answer = remote;
  auto answer = answer_xorb(lookups(), remote.hash);
  ASSERT_TRUE(answer.ok());
  ASSERT_TRUE(answer->found());
  EXPECT_EQ(answer->primary, 1u);
  EXPECT_EQ(answer->reach, Reach::answered);

  sources_.fake_fleet.reach = Reach::unavailable;
  sources_.fake_fleet.xorb_answer.reset();
  answer = answer_xorb(lookups(), remote.hash);
  ASSERT_TRUE(answer.ok());
  EXPECT_FALSE(answer->found());
  EXPECT_EQ(answer->reach, Reach::unavailable);

  answer = answer_xorb(lookups(Lookups::Scope::local_only), remote.hash);
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(answer->reach, Reach::off);
  EXPECT_EQ(sources_.fake_fleet.other_asks, 2) << "local only: not asked";
}

TEST_F(AnswersTest, AFileThisIndexLacksIsTheFleets) {
  st::TestXorb x = st::make_xorb(5, 4);
  shard::ShardWriter w;
  w.add_xorb(x.record);
  shard::FileRecord f = st::make_file(6, {{&x, 0, 4}}, true, true);
  const shard::Hash here = f.header.file_hash;
  w.add_file(f);
  auto bytes = w.write({});
  auto view = shard::ShardView::parse(bytes);
  ASSERT_TRUE(view.ok());
  ASSERT_TRUE(index_->ingest(*view, index::SourceInfo{}, {}).ok());

  auto answer = answer_file(lookups(), here);
  ASSERT_TRUE(answer.ok());
  ASSERT_TRUE(answer->local);
  EXPECT_EQ(answer->local->hash, here);
  EXPECT_EQ(sources_.fake_fleet.other_asks, 0);

  sources_.fake_fleet.file_answer = fleet::FileAnswer{st::seeded_hash(60), {}, std::nullopt, {}};
  answer = answer_file(lookups(), st::seeded_hash(60));
  ASSERT_TRUE(answer.ok());
  EXPECT_FALSE(answer->local);
  ASSERT_TRUE(answer->remote);
  EXPECT_EQ(answer->remote->hash, st::seeded_hash(60));
  EXPECT_EQ(answer->reach, Reach::answered);
  EXPECT_TRUE(answer->found());
}

TEST_F(AnswersTest, FilesOfASha256ThisIndexLacksAreTheFleetsAndSaySo) {
  sources_.fake_fleet.sha256_files = {st::seeded_hash(70), st::seeded_hash(71)};
  auto answer = answer_sha256(lookups(), st::seeded_hash(72));
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(answer->files, sources_.fake_fleet.sha256_files);
  EXPECT_TRUE(answer->from_fleet);
  EXPECT_EQ(answer->reach, Reach::answered);

  sources_.fake_fleet.sha256_files.clear();
  answer = answer_sha256(lookups(), st::seeded_hash(72));
  ASSERT_TRUE(answer.ok());
  EXPECT_TRUE(answer->files.empty());
  EXPECT_FALSE(answer->from_fleet) << "asked, none: not the fleet's";
  EXPECT_EQ(answer->reach, Reach::answered);
}

}  // namespace
}  // namespace dedupd::daemon::answers
