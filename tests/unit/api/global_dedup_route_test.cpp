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
  for (std::string_view prefix : {dedupd::api::kGlobalDedup, dedupd::api::kGlobalDedupShort}) {
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

// Issue 31: the local Xet endpoint's queries (marked by its nginx) are
// counted as answered here or sent upstream; nobody else's are.
TEST_F(GlobalDedupRouteTest, TheEndpointsQueriesAreCountedLocalOrForwarded) {
  const std::string via = std::string(dedupd::api::kViaHeader) + ": " + std::string(dedupd::api::kViaXetEndpoint);
  const std::string known = std::string(dedupd::api::kGlobalDedupShort) + small_.xorbs[1].raw[2].to_string();
  const std::string unknown = std::string(dedupd::api::kGlobalDedupShort) + st::seeded_hash(4242).to_string();

  auto status = client_->get(std::string(dedupd::api::kStatus));
  ASSERT_EQ(status.status, 200) << status.body;
  EXPECT_FALSE(status.json().contains("xet_endpoint")) << "none configured, none seen";

  EXPECT_EQ(client_->get(known).status, 200);    // unmarked: not the endpoint's
  EXPECT_EQ(client_->get(unknown).status, 404);  // likewise
  EXPECT_EQ(client_->request("GET", known, {}, {via}).status, 200);
  EXPECT_EQ(client_->request("GET", known, {}, {via}).status, 200);
  EXPECT_EQ(client_->request("GET", unknown, {}, {via}).status, 404);
  EXPECT_EQ(client_->request("GET", std::string(dedupd::api::kGlobalDedupShort) + "zz", {}, {via}).status, 400);
  EXPECT_EQ(client_->request("GET", known, {}, {"X-Dedupd-Via: someone-else"}).status, 200);

  status = client_->get(std::string(dedupd::api::kStatus));
  ASSERT_EQ(status.status, 200) << status.body;
  auto doc = status.json();
  ASSERT_TRUE(doc.contains("xet_endpoint")) << status.body;
  const auto& e = doc["xet_endpoint"];
  EXPECT_EQ(e["local"], 2);
  EXPECT_EQ(e["forwarded"], 2);
  EXPECT_TRUE(e["upstreams"].is_null()) << "no xet_endpoint.config: upstreams unknown";
  EXPECT_GT(e["since"].get<std::uint64_t>(), 1'700'000'000u);

  auto metrics = client_->get(std::string(dedupd::api::kMetrics));
  EXPECT_NE(metrics.body.find("dedupd_xet_endpoint_queries_total{answered=\"local\"} 2"), std::string::npos);
  EXPECT_NE(metrics.body.find("dedupd_xet_endpoint_queries_total{answered=\"forwarded\"} 2"), std::string::npos);
}

TEST_F(GlobalDedupRouteTest, TheEndpointsUpstreamsComeFromTheDaemon) {
  core::StatusInfo info{"0.1.0-test", 4242, 17, socket_path_, dir_.path(), {}, {}, std::nullopt};
  info.xet_endpoint = core::XetEndpointStatus{"/etc/dedupd/xet-endpoint.conf", true, "",  "https://hub.example",
                                              "https://cas.example",           8787, 8788};
  ON_CALL(service_, status()).WillByDefault(::testing::Return(info));
  auto status = client_->get(std::string(dedupd::api::kStatus));
  ASSERT_EQ(status.status, 200) << status.body;
  const auto e = status.json()["xet_endpoint"];
  EXPECT_EQ(e["upstreams"]["hub"], "https://hub.example");
  EXPECT_EQ(e["upstreams"]["cas"], "https://cas.example");
  EXPECT_EQ(e["ports"]["cas"], 8788);
  EXPECT_EQ(e["config"]["path"], "/etc/dedupd/xet-endpoint.conf");
  EXPECT_EQ(e["config"]["present"], true);
  EXPECT_EQ(e["local"], 0);
  EXPECT_EQ(e["forwarded"], 0);
}

TEST_F(GlobalDedupRouteTest, TheServicesBoundsApplyToEachReply) {
  core::GlobalDedupKey one_xorb{st::seeded_hash(77), 3600, 1, 64ull << 20};
  ON_CALL(service_, global_dedup_key()).WillByDefault(::testing::Return(one_xorb));
  auto r = client_->get(std::string(dedupd::api::kGlobalDedup) + small_.xorbs[1].raw[0].to_string());
  ASSERT_EQ(r.status, 200) << r.body;
  std::vector<std::uint8_t> bytes(r.body.begin(), r.body.end());
  auto view = shard::ShardView::parse(bytes);
  ASSERT_TRUE(view.ok()) << view.error().to_string();
  ASSERT_EQ(view->stats().xorbs, 1u);
  EXPECT_EQ((*view->xorbs().begin()).hash(), small_.xorbs[1].record.header.xorb_hash);
}

TEST_F(GlobalDedupRouteTest, UnknownIs404AndMalformedIs400) {
  auto r = client_->get(std::string(dedupd::api::kGlobalDedup) + st::seeded_hash(123456).to_string());
  EXPECT_EQ(r.status, 404);
  expect_error(r.json(), "not_found");
  r = client_->get(std::string(dedupd::api::kGlobalDedupShort) + "1234");
  EXPECT_EQ(r.status, 400);
  expect_error(r.json(), "bad_request");
}

}  // namespace
}  // namespace dedupd::daemon::testing
