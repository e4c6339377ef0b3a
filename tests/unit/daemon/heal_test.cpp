// The shards a CAS's refusal sets aside (daemon/learn/heal): the xorbs a
// shard names without carrying them, and which shards hold them.
#include "daemon/learn/heal.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "test_support.hpp"
#include "tests/support/temp_dir.hpp"

namespace dedupd::daemon::learn {
namespace {

namespace st = shard::testing;

// A shard whose one file uses a xorb it carries and one it does not: the
// second is what the client was told it need not upload.
TEST(LearnHeal, TheXorbsAShardNamesWithoutCarryingThemAreTheStaleOnes) {
  auto carried = st::make_xorb(1, 4), named = st::make_xorb(2, 4);
  shard::ShardWriter w;
  w.add_xorb(carried.record);
  w.add_file(st::make_file(9, {{&carried, 0, 4}, {&named, 0, 2}, {&named, 2, 4}}, false, false));
  auto bytes = w.write({});
  auto view = shard::ShardView::parse(bytes);
  ASSERT_TRUE(view) << view.error().to_string();
  EXPECT_THAT(xorbs_named_not_carried(*view), ::testing::ElementsAre(named.record.header.xorb_hash));
  EXPECT_TRUE(xorbs_named_not_carried(*view, 0).empty());
}

TEST(LearnHeal, ARefusalSetsAsideTheShardsOfThatCasHoldingTheStaleXorbs) {
  tests::TempDir dir("heal");
  index::Options o;
  o.dir = dir.path() + "/index";
  auto idx = index::Index::open(o);
  ASSERT_TRUE(idx) << idx.error().to_string();
  auto stale = st::make_xorb(2, 4), other = st::make_xorb(3, 4);
  auto put = [&](const st::TestXorb& x, const std::string& cas, std::uint64_t created) {
    shard::ShardWriter w;
    w.add_xorb(x.record);
    shard::WriteOptions wo;
    wo.footer.creation_timestamp = created;
    auto bytes = w.write(wo);
    auto view = shard::ShardView::parse(bytes);
    EXPECT_TRUE(view);
    auto r = (*idx)->ingest(*view, {}, {.now = 1, .cas = cas});
    EXPECT_TRUE(r);
    return r->shard;
  };
  const std::string a = "https://cas-a.example", b = "https://cas-b.example";
  shard::Hash of_a = put(stale, a, 1), of_b = put(stale, b, 2), unknown = put(stale, "", 3), apart = put(other, a, 4);
  auto carried = st::make_xorb(1, 4);
  shard::ShardWriter w;
  w.add_xorb(carried.record);
  w.add_file(st::make_file(9, {{&carried, 0, 4}, {&stale, 0, 4}}, false, false));
  auto bytes = w.write({});
  auto refused = shard::ShardView::parse(bytes);
  ASSERT_TRUE(refused);
  auto healed = set_aside_stale(**idx, *refused, "R", a, /*unknown_too=*/false, 100);
  ASSERT_TRUE(healed) << healed.error().to_string();
  EXPECT_EQ(healed->xorbs_named, 1u);
  EXPECT_THAT(healed->set_aside, ::testing::ElementsAre(of_a));
  auto info = *(*idx)->shard(of_a);
  EXPECT_TRUE(info->set_aside);
  EXPECT_THAT(info->set_aside_reason, ::testing::HasSubstr("refused shard R"));
  EXPECT_THAT(info->set_aside_reason, ::testing::HasSubstr(stale.record.header.xorb_hash.to_string()));
  // Another CAS's shard, an unknown one and one without the xorb stay.
  for (const auto& h : {of_b, unknown, apart}) EXPECT_FALSE((*(*idx)->shard(h))->set_aside);
  // Where unknown shards answered too, they go as well; once aside, a
  // shard is not set aside again.
  healed = set_aside_stale(**idx, *refused, "R2", a, /*unknown_too=*/true, 101);
  ASSERT_TRUE(healed);
  EXPECT_THAT(healed->set_aside, ::testing::ElementsAre(unknown));
  EXPECT_THAT((*(*idx)->shard(of_a))->set_aside_reason, ::testing::HasSubstr("refused shard R,"));
}

}  // namespace
}  // namespace dedupd::daemon::learn
