// GET /v1/chunks/default-merkledb/<hash> over the socket: the reply parses
// as a keyed shard with the chunk's source shard, keyed with the reply's key.
#include "api/routes.hpp"
#include "api_test_support.hpp"
#include "json_checks.hpp"
#include "shard/reader.hpp"

namespace dedupd::daemon::testing {
namespace {

namespace st = shard::testing;
using shard::Hash;

class GlobalDedupRouteTest : public ApiTest {
 protected:
  void SetUp() override {
    ApiTest::SetUp();
    small_ = st::small_shard();
    ingest(small_.writer.write({}));
  }
  st::SmallShard small_;
};

TEST_F(GlobalDedupRouteTest, ReplyIsAKeyedShardHoldingTheChunk) {
  const st::TestXorb& xorb = small_.xorbs[1];
  const Hash& chunk = xorb.raw[2];
  for (std::string_view prefix : {api::kGlobalDedup, api::kGlobalDedupShort}) {
    auto r = client_->get(std::string(prefix) + chunk.to_string());
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.content_type, "application/octet-stream");
    std::vector<std::uint8_t> bytes(r.body.begin(), r.body.end());
    auto view = shard::ShardView::parse(bytes);
    ASSERT_TRUE(view.ok()) << view.error().to_string();
    EXPECT_TRUE(view->keyed());
    EXPECT_EQ(view->chunk_key(), st::seeded_hash(77));  // the service's key
    EXPECT_EQ(view->stats().files, 0u);
    ASSERT_TRUE(view->expiry().has_value());
    EXPECT_EQ(*view->expiry(), view->creation_timestamp() + 3600);

    // The whole source shard, the chunk's own xorb first.
    std::vector<Hash> xorbs;
    bool has_chunk = false;
    Hash keyed = shard::keyed_chunk_hash(view->chunk_key(), chunk);
    for (auto block : view->xorbs()) {
      xorbs.push_back(block.hash());
      for (std::size_t i = 0; i < block.num_chunks(); ++i) has_chunk |= block.chunk(i).chunk_hash == keyed;
    }
    EXPECT_EQ(xorbs, (std::vector<Hash>{xorb.record.header.xorb_hash, small_.xorbs[0].record.header.xorb_hash}));
    EXPECT_TRUE(has_chunk);
  }
}

TEST_F(GlobalDedupRouteTest, TheServicesBoundsApplyToEachReply) {
  GlobalDedupKey one_xorb{st::seeded_hash(77), 3600, 1, 64ull << 20};
  ON_CALL(service_, global_dedup_key()).WillByDefault(::testing::Return(one_xorb));
  auto r = client_->get(std::string(api::kGlobalDedup) + small_.xorbs[1].raw[0].to_string());
  ASSERT_EQ(r.status, 200) << r.body;
  std::vector<std::uint8_t> bytes(r.body.begin(), r.body.end());
  auto view = shard::ShardView::parse(bytes);
  ASSERT_TRUE(view.ok()) << view.error().to_string();
  ASSERT_EQ(view->stats().xorbs, 1u);
  EXPECT_EQ((*view->xorbs().begin()).hash(), small_.xorbs[1].record.header.xorb_hash);
}

TEST_F(GlobalDedupRouteTest, UnknownIs404AndMalformedIs400) {
  auto r = client_->get(std::string(api::kGlobalDedup) + st::seeded_hash(123456).to_string());
  EXPECT_EQ(r.status, 404);
  expect_error(r.json(), "not_found");
  r = client_->get(std::string(api::kGlobalDedupShort) + "1234");
  EXPECT_EQ(r.status, 400);
  expect_error(r.json(), "bad_request");
}

}  // namespace
}  // namespace dedupd::daemon::testing
