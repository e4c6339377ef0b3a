// Admin routes over the socket: they call the Service and render its
// answers as docs/API.md says. (Who may call them: peercred_test.cpp.)
#include <future>
#include <thread>

#include "api/routes.hpp"
#include "api_test_support.hpp"
#include "json_checks.hpp"

namespace dedupd::daemon::testing {
namespace {

using ::testing::_;
using ::testing::HasSubstr;
using ::testing::Return;
namespace st = shard::testing;
using shard::Hash;

class AdminRoutesTest : public ApiTest {
 protected:
  void SetUp() override {
    ApiTest::SetUp();
    small_ = st::small_shard();
    shard_ = ingest(small_.writer.write({}));
  }
  st::SmallShard small_;
  Hash shard_;
};

TEST_F(AdminRoutesTest, Rescan) {
  EXPECT_CALL(service_, rescan()).WillOnce(Return(RescanResult{5, 3, 1}));
  auto r = client_->post(std::string(api::kRescan));
  ASSERT_EQ(r.status, 200) << r.body;
  expect_shape(r.json(), {{"scanned", T::uint}, {"ingested", T::uint}, {"rejected", T::uint}});
  EXPECT_EQ(r.json()["ingested"], 3);
}

TEST_F(AdminRoutesTest, PurgeRendersSummariesAndHonoursDryRun) {
  EXPECT_CALL(service_, purge(true)).WillOnce(Return(PurgeResult{{shard_}, {}}));
  auto r = client_->post(std::string(api::kPurge) + "?dry_run=1");
  ASSERT_EQ(r.status, 200) << r.body;
  auto doc = r.json();
  expect_shape(doc, {{"dry_run", T::boolean}, {"expired", T::array}, {"deleted_files", T::array}});
  EXPECT_TRUE(doc["dry_run"]);
  ASSERT_EQ(doc["expired"].size(), 1u);
  expect_shape(doc["expired"][0], kShardSummaryShape);

  EXPECT_CALL(service_, purge(false)).WillOnce(Return(PurgeResult{{}, {"/watch/a/x.mdb"}}));
  r = client_->post(std::string(api::kPurge));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_FALSE(r.json()["dry_run"]);
  EXPECT_EQ(r.json()["deleted_files"][0], "/watch/a/x.mdb");

  EXPECT_EQ(client_->post(std::string(api::kPurge) + "?dry_run=maybe").status, 400);
}

TEST_F(AdminRoutesTest, DeleteShard) {
  EXPECT_CALL(service_, remove(shard_)).WillOnce([this](const Hash& h) {
    EXPECT_TRUE(index_->remove(h, kNow).ok());
    return index::RemoveOutcome::removed;
  });
  auto r = client_->request("DELETE", std::string(api::kShard) + shard_.to_string());
  ASSERT_EQ(r.status, 200) << r.body;
  expect_shape(r.json(), {{"removed", T::object}});
  expect_shape(r.json()["removed"], kShardSummaryShape);
  EXPECT_EQ(r.json()["removed"]["state"], "removed");

  Hash unknown = st::seeded_hash(9);
  EXPECT_CALL(service_, remove(unknown)).WillOnce(Return(index::RemoveOutcome::not_found));
  r = client_->request("DELETE", std::string(api::kShard) + unknown.to_string());
  EXPECT_EQ(r.status, 404);
  expect_error(r.json(), "not_found");

  EXPECT_CALL(service_, remove(_)).Times(0);
  EXPECT_EQ(client_->request("DELETE", std::string(api::kShard) + "nothex").status, 400);
}

TEST_F(AdminRoutesTest, IngestPassesTheBodyAndName) {
  std::vector<std::uint8_t> bytes = small_.writer.write({});
  EXPECT_CALL(service_, ingest(bytes, std::string("up.mdb")))
      .WillOnce(Return(UploadResult(std::vector<IngestedShard>{{shard_, false, 2, 17, 2}})));
  auto r = client_->post(std::string(api::kIngest) + "?name=up.mdb", std::string(bytes.begin(), bytes.end()));
  ASSERT_EQ(r.status, 200) << r.body;
  auto doc = r.json();
  expect_shape(doc, {{"shards", T::array}});
  expect_shape(doc["shards"][0],
               {{"hash", T::hash}, {"added", T::boolean}, {"xorbs", T::uint}, {"chunks", T::uint}, {"files", T::uint}});
  EXPECT_EQ(doc["shards"][0]["hash"], shard_.to_string());
  EXPECT_FALSE(doc["shards"][0]["added"]);
}

TEST_F(AdminRoutesTest, InvalidUploadIs422WithRuleAndOffset) {
  EXPECT_CALL(service_, ingest(_, _))
      .WillOnce(Return(UploadResult(shard::Error{"header.magic", 0, "not an MDB shard"})));
  auto r = client_->post(std::string(api::kIngest), "garbage");
  ASSERT_EQ(r.status, 422) << r.body;
  auto doc = r.json();
  expect_error(doc, "invalid_shard");
  EXPECT_THAT(doc["error"]["message"].get<std::string>(), HasSubstr("header.magic at offset 0"));
  EXPECT_EQ(doc["error"]["rule"], "header.magic");
  EXPECT_EQ(doc["error"]["offset"], 0);
}

TEST_F(AdminRoutesTest, IngestRefusesEmptyBodiesAndPathNames) {
  EXPECT_CALL(service_, ingest(_, _)).Times(0);
  EXPECT_EQ(client_->post(std::string(api::kIngest), "").status, 400);
  EXPECT_EQ(client_->post(std::string(api::kIngest) + "?name=../etc/x.mdb", "x").status, 400);
}

TEST_F(AdminRoutesTest, AServiceFailureIs500AndTheServerGoesOn) {
  EXPECT_CALL(service_, rescan()).WillOnce([]() -> RescanResult { throw std::runtime_error("boom"); });
  auto r = client_->post(std::string(api::kRescan));
  EXPECT_EQ(r.status, 500);
  expect_error(r.json(), "internal");
  EXPECT_EQ(client_->get(std::string(api::kHealth)).status, 200);
}

// A long admin action (a rescan of a big tree) must not hold up reads: it
// runs off the HTTP threads with its connection suspended.
TEST_F(AdminRoutesTest, ReadsAreAnsweredWhileAnAdminActionRuns) {
  std::promise<void> started, release;
  std::shared_future<void> released = release.get_future().share();
  EXPECT_CALL(service_, rescan()).WillOnce([&] {
    started.set_value();
    released.wait();
    return RescanResult{1, 0, 0};
  });
  HttpReply admin;
  std::thread caller([&] {
    Client c(socket_path_);
    admin = c.post(std::string(api::kRescan));
  });
  started.get_future().wait();
  // Several reads, on new connections and the kept one, all while blocked.
  for (int i = 0; i < 8; ++i) {
    Client c(socket_path_);
    EXPECT_EQ(c.get(std::string(api::kChunk) + small_.xorbs[0].raw[i].to_string()).status, 200);
    EXPECT_EQ(client_->get(std::string(api::kHealth)).status, 200);
  }
  release.set_value();
  caller.join();
  EXPECT_EQ(admin.status, 200);
}

}  // namespace
}  // namespace dedupd::daemon::testing
