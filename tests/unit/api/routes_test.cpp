// Each read route over the real socket: status, content type and the JSON
// shape docs/API.md documents, against a real index.
#include <unistd.h>

#include <sstream>

#include "api/routes.hpp"
#include "api_test_support.hpp"
#include "json_checks.hpp"
#include "shard/reader.hpp"

namespace dedupd::daemon::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Return;
namespace st = shard::testing;
using shard::Hash;

std::string path(std::string_view prefix, const Hash& h) { return std::string(prefix) + h.to_string(); }

class RoutesTest : public ApiTest {
 protected:
  void SetUp() override {
    ApiTest::SetUp();
    small_ = st::small_shard();
    shard_ = ingest(small_.writer.write({}));
    // A keyed shard (as a global-dedup reply the daemon indexed).
    keyed_xorb_ = st::make_xorb(50, 6, key_);
    shard::ShardWriter w;
    w.add_xorb(keyed_xorb_.record);
    shard::WriteOptions o;
    o.footer.chunk_hash_key = key_;
    o.footer.creation_timestamp = kNow - 100;
    o.footer.key_expiry = kNow + 86400;
    keyed_shard_ = ingest(w.write(o));
  }

  const st::TestXorb& xorb0() const { return small_.xorbs[0]; }

  st::SmallShard small_;
  Hash shard_;
  const shard::Key key_ = st::seeded_hash(4040);
  st::TestXorb keyed_xorb_;
  Hash keyed_shard_;
};

TEST_F(RoutesTest, ChunkFoundHasTheLocationShape) {
  const Hash& chunk = xorb0().raw[3];
  auto r = client_->get(path(dedupd::api::kChunk, chunk));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type, "application/json");
  auto doc = r.json();
  expect_shape(doc, {{"hash", T::hash}, {"found", T::boolean}, {"locations", T::array}});
  EXPECT_EQ(doc["hash"], chunk.to_string());
  EXPECT_TRUE(doc["found"]);
  ASSERT_EQ(doc["locations"].size(), 1u);
  const auto& loc = doc["locations"][0];
  expect_shape(loc, kLocationShape);
  const auto& entry = xorb0().record.chunks[3];
  EXPECT_EQ(loc["xorb"], xorb0().record.header.xorb_hash.to_string());
  EXPECT_EQ(loc["chunk_index"], 3);
  EXPECT_EQ(loc["byte_start"], entry.byte_start);
  EXPECT_EQ(loc["byte_end"], entry.byte_start + entry.unpacked_bytes);
  EXPECT_EQ(loc["unpacked_bytes"], entry.unpacked_bytes);
  EXPECT_EQ(loc["flags"], entry.flags);
  ASSERT_EQ(loc["shards"].size(), 1u);
  expect_shape(loc["shards"][0], kShardRefShape);
  EXPECT_EQ(loc["shards"][0]["shard"], shard_.to_string());
  EXPECT_TRUE(loc["shards"][0]["expiry"].is_null());
  EXPECT_FALSE(loc["shards"][0]["keyed"]);
}

TEST_F(RoutesTest, ChunkFromAKeyedShardIsFoundByItsRawHash) {
  auto r = client_->get(path(dedupd::api::kChunk, keyed_xorb_.raw[2]));
  ASSERT_EQ(r.status, 200) << r.body;
  auto doc = r.json();
  ASSERT_EQ(doc["locations"].size(), 1u) << r.body;
  const auto& ref = doc["locations"][0]["shards"][0];
  EXPECT_EQ(ref["shard"], keyed_shard_.to_string());
  EXPECT_TRUE(ref["keyed"]);
  EXPECT_EQ(ref["expiry"], kNow + 86400);
}

TEST_F(RoutesTest, UnknownChunkIs404WithTheLookupShapeAndAnError) {
  auto r = client_->get(path(dedupd::api::kChunk, st::seeded_hash(999999)));
  ASSERT_EQ(r.status, 404);
  auto doc = r.json();
  EXPECT_FALSE(doc["found"]);
  EXPECT_TRUE(doc["locations"].empty());
  expect_error(doc, "not_found");
}

TEST_F(RoutesTest, MalformedHashSaysWhy) {
  auto r = client_->get(std::string(dedupd::api::kChunk) + "abc");
  ASSERT_EQ(r.status, 400);
  expect_error(r.json(), "bad_request");
  EXPECT_THAT(r.json()["error"]["message"].get<std::string>(), HasSubstr("64 hex digits, got 3"));
  std::string bad(64, 'a');
  bad[10] = 'x';
  r = client_->get(std::string(dedupd::api::kChunk) + bad);
  ASSERT_EQ(r.status, 400);
  EXPECT_THAT(r.json()["error"]["message"].get<std::string>(), HasSubstr("not a hex digit"));
}

TEST_F(RoutesTest, BatchAnswersInRequestOrder) {
  Hash missing = st::seeded_hash(424242);
  std::string body = R"({"hashes": [")" + xorb0().raw[0].to_string() + R"(", ")" + missing.to_string() + R"(", ")" +
                     keyed_xorb_.raw[5].to_string() + R"("]})";
  auto r = client_->post(std::string(dedupd::api::kChunkBatch), body);
  ASSERT_EQ(r.status, 200) << r.body;
  auto doc = r.json();
  expect_shape(doc, {{"results", T::array}, {"found", T::uint}, {"missing", T::uint}});
  EXPECT_EQ(doc["found"], 2);
  EXPECT_EQ(doc["missing"], 1);
  ASSERT_EQ(doc["results"].size(), 3u);
  for (const auto& res : doc["results"])
    expect_shape(res, {{"hash", T::hash}, {"found", T::boolean}, {"locations", T::array}});
  EXPECT_EQ(doc["results"][0]["hash"], xorb0().raw[0].to_string());
  EXPECT_TRUE(doc["results"][0]["found"]);
  expect_shape(doc["results"][0]["locations"][0], kLocationShape);
  EXPECT_EQ(doc["results"][1]["hash"], missing.to_string());
  EXPECT_FALSE(doc["results"][1]["found"]);
  EXPECT_TRUE(doc["results"][1]["locations"].empty());
  EXPECT_TRUE(doc["results"][2]["locations"][0]["shards"][0]["keyed"]);
}

// Hashes one a line in, one JSON object a line out, with chosen fields.
TEST_F(RoutesTest, BatchAsLinesWithFields) {
  Hash missing = st::seeded_hash(424243);
  std::string body = xorb0().raw[1].to_string() + "\n\n" + missing.to_string() + "\r\n" +
                     keyed_xorb_.raw[2].to_string();  // no final newline
  auto r = client_->request("POST", std::string(dedupd::api::kChunkBatch) + "?fields=hash,found,xorb", body,
                            {"Content-Type: text/plain", "Accept: application/x-ndjson"});
  ASSERT_EQ(r.status, 200) << r.body;
  std::vector<nlohmann::json> lines;
  std::istringstream in(r.body);
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 3u) << r.body;
  EXPECT_EQ(lines[0]["hash"], xorb0().raw[1].to_string());
  EXPECT_EQ(lines[0]["locations"][0].size(), 1u) << "only xorb";
  EXPECT_TRUE(lines[0]["locations"][0].contains("xorb"));
  EXPECT_EQ(lines[1],
            nlohmann::json({{"hash", missing.to_string()}, {"found", false}, {"locations", nlohmann::json::array()}}));
  EXPECT_TRUE(lines[2]["found"]);

  r = client_->request("POST", std::string(dedupd::api::kChunkBatch) + "?fields=size", body,
                       {"Content-Type: text/plain"});
  EXPECT_EQ(r.status, 400);
  r = client_->request("POST", std::string(dedupd::api::kChunkBatch), "xyz\n", {"Content-Type: text/plain"});
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.json()["error"]["message"].get<std::string>(), HasSubstr("line 1"));
}

TEST_F(RoutesTest, BatchRejectsBadBodies) {
  auto r = client_->post(std::string(dedupd::api::kChunkBatch), "{\"hashes\": [");
  EXPECT_EQ(r.status, 400);
  expect_error(r.json(), "bad_request");
  r = client_->post(std::string(dedupd::api::kChunkBatch), R"({"hashes": ["00", "11"]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.json()["error"]["message"].get<std::string>(), HasSubstr("hashes[0]"));
  r = client_->post(std::string(dedupd::api::kChunkBatch), R"({"hash": []})");
  EXPECT_EQ(r.status, 400);
  r = client_->post(std::string(dedupd::api::kChunkBatch), R"({"hashes": []})");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.json()["missing"], 0);
}

TEST_F(RoutesTest, XorbShape) {
  auto r = client_->get(path(dedupd::api::kXorb, xorb0().record.header.xorb_hash));
  ASSERT_EQ(r.status, 200) << r.body;
  auto doc = r.json();
  expect_shape(doc, {{"xorb", T::hash},
                     {"num_chunks", T::uint},
                     {"bytes_in_xorb", T::uint},
                     {"bytes_on_disk", T::uint},
                     {"keyed", T::boolean},
                     {"origin", T::string},
                     {"chunks", T::array},
                     {"shards", T::array}});
  EXPECT_EQ(doc["num_chunks"], xorb0().raw.size());
  EXPECT_EQ(doc["bytes_in_xorb"], xorb0().record.header.bytes_in_xorb);
  EXPECT_EQ(doc["bytes_on_disk"], xorb0().record.header.bytes_on_disk);
  ASSERT_EQ(doc["chunks"].size(), xorb0().raw.size());
  for (const auto& c : doc["chunks"])
    expect_shape(c, {{"index", T::uint},
                     {"hash", T::hash},
                     {"byte_start", T::uint},
                     {"unpacked_bytes", T::uint},
                     {"flags", T::uint}});
  EXPECT_EQ(doc["chunks"][4]["hash"], xorb0().raw[4].to_string());
  expect_shape(doc["shards"][0], kShardRefShape);

  // A keyed xorb lists its hashes as stored.
  r = client_->get(path(dedupd::api::kXorb, keyed_xorb_.record.header.xorb_hash));
  ASSERT_EQ(r.status, 200);
  EXPECT_TRUE(r.json()["keyed"]);
  EXPECT_EQ(r.json()["chunks"][0]["hash"], keyed_xorb_.record.chunks[0].chunk_hash.to_string());

  EXPECT_EQ(client_->get(path(dedupd::api::kXorb, st::seeded_hash(5))).status, 404);
  EXPECT_EQ(client_->get(std::string(dedupd::api::kXorb) + "zz").status, 400);
}

TEST_F(RoutesTest, FileShapeAndSha256) {
  shard::ShardWriter copy = small_.writer;
  auto bytes = copy.write({});
  auto view = shard::ShardView::parse(bytes);
  ASSERT_TRUE(view.ok());
  auto file = *view->files().begin();
  auto r = client_->get(path(dedupd::api::kFile, file.hash()));
  ASSERT_EQ(r.status, 200) << r.body;
  auto doc = r.json();
  expect_shape(doc, {{"file", T::hash},
                     {"size", T::uint},
                     {"sha256", T::string_or_null},
                     {"verification", T::boolean},
                     {"terms", T::array},
                     {"origin", T::string},
                     {"shards", T::array}});
  EXPECT_TRUE(doc["verification"]);
  ASSERT_TRUE(doc["sha256"].is_string());
  for (const auto& t : doc["terms"])
    expect_shape(t, {{"xorb", T::hash}, {"chunk_start", T::uint}, {"chunk_end", T::uint}, {"unpacked_bytes", T::uint}});
  EXPECT_EQ(doc["shards"][0], shard_.to_string());

  std::string sha = doc["sha256"];
  r = client_->get(std::string(dedupd::api::kSha256) + sha);
  ASSERT_EQ(r.status, 200) << r.body;
  expect_shape(r.json(), {{"sha256", T::string}, {"files", T::array}});
  EXPECT_EQ(r.json()["sha256"], sha);
  EXPECT_EQ(r.json()["files"][0], file.hash().to_string());

  r = client_->get(path(dedupd::api::kSha256, st::seeded_hash(31337)));
  EXPECT_EQ(r.status, 404);
  expect_error(r.json(), "not_found");
  EXPECT_EQ(client_->get(std::string(dedupd::api::kSha256) + "xyz").status, 400);
  EXPECT_EQ(client_->get(path(dedupd::api::kFile, st::seeded_hash(6))).status, 404);
}

TEST_F(RoutesTest, ShardsListOneAndFilter) {
  auto r = client_->get(std::string(dedupd::api::kShards));
  ASSERT_EQ(r.status, 200) << r.body;
  auto doc = r.json();
  expect_shape(doc, {{"shards", T::array}});
  ASSERT_EQ(doc["shards"].size(), 2u);
  for (const auto& s : doc["shards"]) expect_shape(s, kShardSummaryShape);

  r = client_->get(path(dedupd::api::kShard, keyed_shard_));
  ASSERT_EQ(r.status, 200) << r.body;
  doc = r.json();
  expect_shape(doc, kShardSummaryShape);
  EXPECT_EQ(doc["state"], "live");
  EXPECT_TRUE(doc["keyed"]);
  EXPECT_EQ(doc["expiry"], kNow + 86400);
  EXPECT_EQ(doc["xorbs"], 1);
  EXPECT_EQ(doc["chunks"], 6);

  r = client_->get(std::string(dedupd::api::kShards) + "?state=live");
  EXPECT_EQ(r.json()["shards"].size(), 2u);
  r = client_->get(std::string(dedupd::api::kShards) + "?state=expired");
  EXPECT_TRUE(r.json()["shards"].empty());
  r = client_->get(std::string(dedupd::api::kShards) + "?state=sideways");
  EXPECT_EQ(r.status, 400);
  expect_error(r.json(), "bad_request");
  EXPECT_EQ(client_->get(path(dedupd::api::kShard, st::seeded_hash(8))).status, 404);
}

TEST_F(RoutesTest, RejectedFilesAreListedWithTheirReason) {
  index::RejectInfo reject;
  reject.path = "/watch/a/broken.mdb";
  reject.size = 100;
  reject.content_hash = st::seeded_hash(77);
  reject.rule = "header.magic";
  reject.offset = 0;
  reject.message = "not an MDB shard";
  reject.recorded_at = kNow;
  ASSERT_TRUE(index_->record_rejected(reject).ok());

  auto r = client_->get(std::string(dedupd::api::kShards) + "?state=rejected");
  ASSERT_EQ(r.status, 200) << r.body;
  auto list = r.json()["shards"];
  ASSERT_EQ(list.size(), 1u);
  auto shape = kShardSummaryShape;
  shape.emplace_back("reason", T::object);
  expect_shape(list[0], shape);
  EXPECT_EQ(list[0]["state"], "rejected");
  expect_shape(list[0]["reason"], {{"rule", T::string}, {"offset", T::uint}, {"message", T::string}});
  EXPECT_EQ(list[0]["reason"]["rule"], "header.magic");

  r = client_->get(path(dedupd::api::kShard, st::seeded_hash(77)));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["state"], "rejected");
  // Unfiltered lists show shards and rejects.
  EXPECT_EQ(client_->get(std::string(dedupd::api::kShards)).json()["shards"].size(), 3u);
}

TEST_F(RoutesTest, StatsAndStatus) {
  auto r = client_->get(std::string(dedupd::api::kStats));
  ASSERT_EQ(r.status, 200) << r.body;
  auto doc = r.json();
  expect_shape(doc, kStatsShape);
  expect_shape(doc["shards"], {{"live", T::uint}, {"expired", T::uint}, {"removed", T::uint}, {"rejected", T::uint}});
  EXPECT_EQ(doc["shards"]["live"], 2);
  EXPECT_EQ(doc["xorbs"], 3);
  EXPECT_EQ(doc["chunks"], 12 + 5 + 6);
  EXPECT_EQ(doc["next_expiry"], kNow + 86400);

  r = client_->get(std::string(dedupd::api::kStatus));
  ASSERT_EQ(r.status, 200) << r.body;
  doc = r.json();
  expect_shape(doc, {{"version", T::string},
                     {"pid", T::uint},
                     {"uptime_s", T::uint},
                     {"socket", T::string},
                     {"state_dir", T::string},
                     {"watch", T::array},
                     {"ready", T::boolean},
                     {"stats", T::object},
                     {"xet_caches", T::array},
                     {"waiting", T::object},
                     {"state_dir_space", T::object},
                     {"index_health", T::object}});
  EXPECT_EQ(doc["pid"], 4242);
  EXPECT_EQ(doc["waiting"]["count"], 1);
  EXPECT_EQ(doc["waiting"]["files"][0]["rule"], "index.no_space");
  EXPECT_EQ(doc["waiting"]["files"][0]["age_s"], 60);
  EXPECT_EQ(doc["state_dir_space"]["free_bytes"], 4096);
  EXPECT_EQ(doc["state_dir_space"]["disk_full"], true);
  EXPECT_EQ(doc["index_health"]["state"], "rebuilding");
  EXPECT_EQ(doc["index_health"]["rebuild"]["files_done"], 4);
  EXPECT_EQ(doc["index_health"]["moved_to"], "/state/index.damaged-20261201T000000Z");
  EXPECT_EQ(doc["watch"][1], "/watch/b");
  expect_shape(doc["stats"], kStatsShape);
  ASSERT_EQ(doc["xet_caches"].size(), 1u);
  const auto& cache = doc["xet_caches"][0];
  EXPECT_EQ(cache["endpoint"], "/home/ci/.cache/huggingface/xet/https___cas_serv-AbCd");
  EXPECT_EQ(cache["chunk_entries"], 70);
  EXPECT_EQ(cache["max_chunk_entries"], 100);
  EXPECT_EQ(cache["merges"], 2);

  // /metrics: one series per managed cache, beside its caps; the faults.
  r = client_->get(std::string(dedupd::api::kMetrics));
  ASSERT_EQ(r.status, 200);
  for (const char* line :
       {"dedupd_disk_full 1\n", "dedupd_ingest_waiting_files 1\n", "dedupd_ingest_waiting_oldest_age_seconds 60\n",
        "dedupd_state_dir_free_bytes 4096\n", "dedupd_index_damaged 1\n"})
    EXPECT_NE(r.body.find(line), std::string::npos) << line << r.body;
  EXPECT_NE(
      r.body.find(
          "dedupd_xet_cache_chunk_entries{endpoint=\"/home/ci/.cache/huggingface/xet/https___cas_serv-AbCd\"} 70"),
      std::string::npos)
      << r.body;
  EXPECT_NE(r.body.find("dedupd_xet_cache_max_chunk_entries{endpoint="), std::string::npos);
}

TEST_F(RoutesTest, NotReadyIs503ButStatusStillAnswers) {
  ON_CALL(service_, index()).WillByDefault(Return(nullptr));
  for (const std::string& p :
       {std::string(dedupd::api::kHealth), std::string(dedupd::api::kStats), path(dedupd::api::kChunk, xorb0().raw[0]),
        std::string(dedupd::api::kShards), path(dedupd::api::kGlobalDedup, xorb0().raw[0])}) {
    auto r = client_->get(p);
    EXPECT_EQ(r.status, 503) << p;
    expect_error(r.json(), "not_ready");
  }
  auto r = client_->get(std::string(dedupd::api::kStatus));
  ASSERT_EQ(r.status, 200);
  EXPECT_FALSE(r.json()["ready"]);
  EXPECT_TRUE(r.json()["stats"].is_null());
}

TEST_F(RoutesTest, HealthAndMetrics) {
  auto r = client_->get(std::string(dedupd::api::kHealth));
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.json(), nlohmann::json({{"status", "ok"}}));

  client_->get(path(dedupd::api::kChunk, xorb0().raw[0]));
  client_->get(path(dedupd::api::kChunk, st::seeded_hash(1234567)));
  core::DaemonCounters c;
  c.shards_ingested = 7;
  c.shards_rejected = 2;
  ON_CALL(service_, counters()).WillByDefault(Return(c));
  r = client_->get(std::string(dedupd::api::kMetrics));
  ASSERT_EQ(r.status, 200);
  EXPECT_THAT(r.content_type, HasSubstr("text/plain"));
  EXPECT_THAT(r.body, HasSubstr("dedupd_http_requests_total{route=\"chunk\",status=\"200\"} 1\n"));
  EXPECT_THAT(r.body, HasSubstr("dedupd_http_requests_total{route=\"chunk\",status=\"404\"} 1\n"));
  EXPECT_THAT(r.body, HasSubstr("dedupd_http_request_duration_seconds_bucket{route=\"chunk\",le=\"+Inf\"} 2\n"));
  EXPECT_THAT(r.body, HasSubstr("dedupd_shards_ingested_total 7\n"));
  EXPECT_THAT(r.body, HasSubstr("dedupd_shards_rejected_total 2\n"));
  EXPECT_THAT(r.body, HasSubstr("dedupd_chunk_entries 23\n"));
  EXPECT_THAT(r.body, HasSubstr("dedupd_chunk_lookups_total 2\n"));
  EXPECT_THAT(r.body, HasSubstr("dedupd_ready 1\n"));
}

// The chunk filters' memory is the daemon's, not on disk: status and
// /metrics are where an operator sees it against index.filter_memory.
TEST_F(RoutesTest, StatusAndMetricsShowTheChunkFilter) {
  auto doc = client_->get(std::string(dedupd::api::kStats)).json();
  EXPECT_EQ(doc["chunk_filter"]["bytes"], 0) << "none built yet";
  EXPECT_EQ(doc["chunk_filter"]["in_service"], false);
  auto built = index_->build_chunk_filter();
  ASSERT_TRUE(built) << built.error().to_string();
  auto r = client_->get(std::string(dedupd::api::kStatus));
  ASSERT_EQ(r.status, 200) << r.body;
  const auto status = r.json();
  const auto& f = status["stats"]["chunk_filter"];
  expect_shape(f,
               {{"in_service", T::boolean},
                {"bytes", T::uint},
                {"max_bytes", T::uint},
                {"capacity", T::uint},
                {"entries", T::uint},
                {"at_bound", T::boolean}},
               false);
  EXPECT_EQ(f.size(), 7u) << f.dump();
  EXPECT_EQ(f["in_service"], true);
  EXPECT_EQ(f["bytes"], built->bytes);
  EXPECT_GT(built->bytes, 0u);
  EXPECT_EQ(f["entries"], 12 + 5 + 6);
  EXPECT_EQ(f["capacity"], built->capacity);
  EXPECT_EQ(f["max_bytes"], index::Options{}.filter_memory);
  EXPECT_EQ(f["at_bound"], false);
  ASSERT_TRUE(f["false_positive_rate"].is_number());
  EXPECT_GT(f["false_positive_rate"].get<double>(), 0.0);
  EXPECT_LT(f["false_positive_rate"].get<double>(), 0.01);

  r = client_->get(std::string(dedupd::api::kMetrics));
  ASSERT_EQ(r.status, 200);
  EXPECT_THAT(r.body, HasSubstr("dedupd_chunk_filter_bytes " + std::to_string(built->bytes) + "\n"));
  EXPECT_THAT(r.body,
              HasSubstr("dedupd_chunk_filter_max_bytes " + std::to_string(index::Options{}.filter_memory) + "\n"));
  EXPECT_THAT(r.body, HasSubstr("dedupd_chunk_filter_entries 23\n"));
  EXPECT_THAT(r.body, HasSubstr("dedupd_chunk_filter_in_service 1\n"));
  EXPECT_THAT(r.body, HasSubstr("# TYPE dedupd_chunk_filter_false_positive_ratio gauge\n"));
}

TEST_F(RoutesTest, UnknownRouteWrongMethodAndHead) {
  auto r = client_->get("/v2/nothing");
  EXPECT_EQ(r.status, 404);
  expect_error(r.json(), "not_found");

  r = client_->request("PUT", std::string(dedupd::api::kStats), "x");
  EXPECT_EQ(r.status, 405);
  expect_error(r.json(), "method_not_allowed");
  EXPECT_THAT(r.headers, HasSubstr("Allow: GET, HEAD"));
  r = client_->request("DELETE", std::string(dedupd::api::kChunkBatch));
  EXPECT_EQ(r.status, 405);
  EXPECT_THAT(r.headers, HasSubstr("Allow: POST"));

  r = client_->request("HEAD", std::string(dedupd::api::kStats));
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.body.empty());
}

TEST_F(RoutesTest, ConnectionsAreKeptAlive) {
  auto first = client_->get(std::string(dedupd::api::kHealth));
  auto second = client_->get(path(dedupd::api::kChunk, xorb0().raw[1]));
  auto third = client_->post(std::string(dedupd::api::kChunkBatch), R"({"hashes":[]})");
  // Errors decided from the headers alone keep the connection too.
  auto fourth = client_->get("/v1/nowhere");
  auto fifth = client_->post(std::string(dedupd::api::kStats));
  auto sixth = client_->get(std::string(dedupd::api::kHealth));
  EXPECT_EQ(first.new_connections, 1);
  EXPECT_EQ(second.new_connections, 0);
  EXPECT_EQ(third.new_connections, 0);
  EXPECT_EQ(fourth.status, 404);
  EXPECT_EQ(fifth.status, 405);
  EXPECT_EQ(sixth.new_connections, 0);
}

}  // namespace
}  // namespace dedupd::daemon::testing
