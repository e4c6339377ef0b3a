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
  EXPECT_CALL(service_, rescan()).WillOnce(Return(core::RescanResult{5, 3, 1}));
  auto r = client_->post(std::string(dedupd::api::kRescan));
  ASSERT_EQ(r.status, 200) << r.body;
  expect_shape(r.json(), {{"scanned", T::uint}, {"ingested", T::uint}, {"rejected", T::uint}});
  EXPECT_EQ(r.json()["ingested"], 3);
}

TEST_F(AdminRoutesTest, PurgeRendersSummariesAndHonoursDryRun) {
  EXPECT_CALL(service_, purge(true)).WillOnce(Return(core::PurgeResult{{shard_}, {}}));
  auto r = client_->post(std::string(dedupd::api::kPurge) + "?dry_run=1");
  ASSERT_EQ(r.status, 200) << r.body;
  auto doc = r.json();
  expect_shape(doc, {{"dry_run", T::boolean}, {"expired", T::array}, {"deleted_files", T::array}});
  EXPECT_TRUE(doc["dry_run"]);
  ASSERT_EQ(doc["expired"].size(), 1u);
  expect_shape(doc["expired"][0], kShardSummaryShape);

  EXPECT_CALL(service_, purge(false)).WillOnce(Return(core::PurgeResult{{}, {"/watch/a/x.mdb"}}));
  r = client_->post(std::string(dedupd::api::kPurge));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_FALSE(r.json()["dry_run"]);
  EXPECT_EQ(r.json()["deleted_files"][0], "/watch/a/x.mdb");

  EXPECT_EQ(client_->post(std::string(dedupd::api::kPurge) + "?dry_run=maybe").status, 400);
}

TEST_F(AdminRoutesTest, DeleteShard) {
  EXPECT_CALL(service_, remove(shard_)).WillOnce([this](const Hash& h) {
    EXPECT_TRUE(index_->remove(h, kNow).ok());
    return index::RemoveOutcome::removed;
  });
  auto r = client_->request("DELETE", std::string(dedupd::api::kShard) + shard_.to_string());
  ASSERT_EQ(r.status, 200) << r.body;
  expect_shape(r.json(), {{"removed", T::object}});
  expect_shape(r.json()["removed"], kShardSummaryShape);
  EXPECT_EQ(r.json()["removed"]["state"], "removed");

  Hash unknown = st::seeded_hash(9);
  EXPECT_CALL(service_, remove(unknown)).WillOnce(Return(index::RemoveOutcome::not_found));
  r = client_->request("DELETE", std::string(dedupd::api::kShard) + unknown.to_string());
  EXPECT_EQ(r.status, 404);
  expect_error(r.json(), "not_found");

  EXPECT_CALL(service_, remove(_)).Times(0);
  EXPECT_EQ(client_->request("DELETE", std::string(dedupd::api::kShard) + "nothex").status, 400);
}

TEST_F(AdminRoutesTest, IngestPassesTheBodyAndName) {
  std::vector<std::uint8_t> bytes = small_.writer.write({});
  EXPECT_CALL(service_, ingest(bytes, std::string("up.mdb")))
      .WillOnce(Return(core::UploadResult(std::vector<core::IngestedShard>{{shard_, false, 2, 17, 2}})));
  auto r = client_->post(std::string(dedupd::api::kIngest) + "?name=up.mdb", std::string(bytes.begin(), bytes.end()));
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
      .WillOnce(Return(core::UploadResult(base::Error{"header.magic", 0, "not an MDB shard"})));
  auto r = client_->post(std::string(dedupd::api::kIngest), "garbage");
  ASSERT_EQ(r.status, 422) << r.body;
  auto doc = r.json();
  expect_error(doc, "invalid_shard");
  EXPECT_THAT(doc["error"]["message"].get<std::string>(), HasSubstr("header.magic at offset 0"));
  EXPECT_EQ(doc["error"]["rule"], "header.magic");
  EXPECT_EQ(doc["error"]["offset"], 0);
}

TEST_F(AdminRoutesTest, IngestRefusesEmptyBodiesAndPathNames) {
  EXPECT_CALL(service_, ingest(_, _)).Times(0);
  EXPECT_EQ(client_->post(std::string(dedupd::api::kIngest), "").status, 400);
  EXPECT_EQ(client_->post(std::string(dedupd::api::kIngest) + "?name=../etc/x.mdb", "x").status, 400);
}

// The seam's failures are values; each rule gets its status and code.
// Not "busy" (which clients retry): the action is still queued and runs.
TEST_F(AdminRoutesTest, AnActionTheWorkLoopHasNotFinishedIs503InProgress) {
  EXPECT_CALL(service_, rescan()).WillOnce(Return(base::Error{core::kRuleBusy, 0, "the work loop is busy", false}));
  auto r = client_->post(std::string(dedupd::api::kRescan));
  ASSERT_EQ(r.status, 503) << r.body;
  expect_error(r.json(), "in_progress");
  EXPECT_THAT(r.headers, ::testing::Not(HasSubstr("Retry-After")));
}

TEST_F(AdminRoutesTest, AFullDiskIs503UnavailableAndTheServerGoesOn) {
  EXPECT_CALL(service_, purge(false)).WillOnce(Return(base::Error{"index.no_space", 0, "disk full", false}));
  auto r = client_->post(std::string(dedupd::api::kPurge));
  ASSERT_EQ(r.status, 503) << r.body;
  expect_error(r.json(), "unavailable");
  EXPECT_THAT(r.json()["error"]["message"].get<std::string>(), HasSubstr("index.no_space: disk full"));
  EXPECT_EQ(client_->get(std::string(dedupd::api::kHealth)).status, 200);
}

TEST_F(AdminRoutesTest, AnIndexFailureIs500AndABadArgument400) {
  EXPECT_CALL(service_, remove(shard_))
      .WillOnce(Return(base::Error{"index.lmdb", 0, "mdb_del: MDB_CORRUPTED", false}))
      .WillOnce(Return(base::Error{"index.argument", 0, "not a shard hash", false}));
  auto r = client_->request("DELETE", std::string(dedupd::api::kShard) + shard_.to_string());
  ASSERT_EQ(r.status, 500) << r.body;
  expect_error(r.json(), "internal");
  r = client_->request("DELETE", std::string(dedupd::api::kShard) + shard_.to_string());
  ASSERT_EQ(r.status, 400) << r.body;
  expect_error(r.json(), "bad_request");
}

TEST_F(AdminRoutesTest, AnUploadTheIndexCannotTakeIsNot422) {
  EXPECT_CALL(service_, ingest(_, _))
      .WillOnce(Return(core::UploadResult(base::Error{"index.map_full", 0, "max_map_size reached", false})))
      .WillOnce(
          Return(core::UploadResult(base::Error{core::kRuleInternal, 0, "on the work loop: std::bad_alloc", false})));
  auto r = client_->post(std::string(dedupd::api::kIngest), "bytes");
  ASSERT_EQ(r.status, 503) << r.body;
  expect_error(r.json(), "unavailable");
  r = client_->post(std::string(dedupd::api::kIngest), "bytes");
  ASSERT_EQ(r.status, 500) << r.body;
  expect_error(r.json(), "internal");
}

TEST_F(AdminRoutesTest, AnExceptionThatEscapesAnywayIs500AndTheServerGoesOn) {
  EXPECT_CALL(service_, rescan()).WillOnce([]() -> base::Result<core::RescanResult> {
    throw std::runtime_error("boom");
  });
  auto r = client_->post(std::string(dedupd::api::kRescan));
  EXPECT_EQ(r.status, 500);
  expect_error(r.json(), "internal");
  EXPECT_EQ(client_->get(std::string(dedupd::api::kHealth)).status, 200);
}

TEST_F(AdminRoutesTest, ForgetHostWithoutAFleetIs404) {
  EXPECT_CALL(service_, fleet_forget_host(_)).Times(0);  // the route sees no publisher first
  auto r = client_->post(std::string(dedupd::api::kFleetForgetHost) + "old-host");
  ASSERT_EQ(r.status, 404) << r.body;
  expect_error(r.json(), "not_found");
}

TEST_F(AdminRoutesTest, ForgetHostMapsTheFleetsAnswers) {
  ON_CALL(service_, fleet_state()).WillByDefault(Return(fleet_link::PublisherState{}));
  EXPECT_CALL(service_, fleet_forget_host(std::string("old-host")))
      .WillOnce(Return(base::Result<bool>(true)))
      .WillOnce(Return(base::Result<bool>(false)))
      .WillOnce(Return(base::Result<bool>(base::Error{"fleet.connect", 0, "connection refused", false})))
      .WillOnce(Return(base::Result<bool>(base::Error{"fleet.query", 0, "syntax error", false})))
      .WillOnce(Return(base::Result<bool>(base::Error{core::kRuleNoFleet, 0, "no fleet configured", false})));
  const std::string path = std::string(dedupd::api::kFleetForgetHost) + "old-host";
  auto r = client_->post(path);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(r.json()["forgotten"]);
  // In the order of the answers above: an unknown host, the primary out of
  // reach, the server refusing a statement, no fleet after all.
  const std::pair<long, std::string> expected[] = {
      {404, "not_found"}, {503, "unavailable"}, {500, "internal"}, {404, "not_found"}};
  for (const auto& [status, code] : expected) {
    r = client_->post(path);
    ASSERT_EQ(r.status, status) << r.body;
    expect_error(r.json(), code);
  }
  EXPECT_EQ(client_->post(std::string(dedupd::api::kFleetForgetHost) + "bad!host").status, 400);
}

// A fleet out of reach degrades the status answer; it never fails it.
TEST_F(AdminRoutesTest, FleetStatusOutOfReachIsAnswered) {
  ON_CALL(service_, fleet_state()).WillByDefault(Return(fleet_link::PublisherState{}));
  EXPECT_CALL(service_, fleet_status())
      .WillOnce(Return(base::Result<fleet::Status>(base::Error{"fleet.timeout", 0, "no answer in 2 s", false})));
  auto r = client_->get(std::string(dedupd::api::kFleetStatus));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["fleet"], "unavailable");
  EXPECT_EQ(r.json()["error"], "no answer in 2 s");
}

// A long admin action (a rescan of a big tree) must not hold up reads: it
// runs off the HTTP threads with its connection suspended.
TEST_F(AdminRoutesTest, ReadsAreAnsweredWhileAnAdminActionRuns) {
  std::promise<void> started, release;
  std::shared_future<void> released = release.get_future().share();
  EXPECT_CALL(service_, rescan()).WillOnce([&] {
    started.set_value();
    released.wait();
    return core::RescanResult{1, 0, 0};
  });
  HttpReply admin;
  std::thread caller([&] {
    Client c(socket_path_);
    admin = c.post(std::string(dedupd::api::kRescan));
  });
  started.get_future().wait();
  // Several reads, on new connections and the kept one, all while blocked.
  for (int i = 0; i < 8; ++i) {
    Client c(socket_path_);
    EXPECT_EQ(c.get(std::string(dedupd::api::kChunk) + small_.xorbs[0].raw[i].to_string()).status, 200);
    EXPECT_EQ(client_->get(std::string(dedupd::api::kHealth)).status, 200);
  }
  release.set_value();
  caller.join();
  EXPECT_EQ(admin.status, 200);
}

}  // namespace
}  // namespace dedupd::daemon::testing
