// The routing table and the batch body parser, without a socket.
#include <gtest/gtest.h>

#include "api/routes.hpp"
#include "daemon/api/http/batch_request.hpp"
#include "daemon/api/http/router.hpp"
#include "daemon/api/routes/routes.hpp"

namespace dedupd::daemon::api::http {
namespace {

TEST(Router, MatchesExactPrefixAndMethod) {
  Router router(routes::api_routes());
  auto m = router.match("/v1/chunk", "POST");
  ASSERT_TRUE(m.route && m.entry);
  EXPECT_EQ(m.route->name, "chunk_batch");

  m = router.match("/v1/chunk/abc", "GET");
  ASSERT_TRUE(m.route && m.entry);
  EXPECT_EQ(m.route->name, "chunk");
  EXPECT_EQ(m.tail, "abc");

  m = router.match("/v1/shard/abc", "DELETE");
  ASSERT_TRUE(m.entry);
  EXPECT_EQ(m.entry->access, Access::admin);
  m = router.match("/v1/shard/abc", "GET");
  ASSERT_TRUE(m.entry);
  EXPECT_EQ(m.entry->access, Access::read);

  m = router.match("/v1/chunks/default-merkledb/abc", "GET");
  ASSERT_TRUE(m.entry);
  EXPECT_EQ(m.tail, "abc");
  m = router.match("/v1/chunks/default/abc", "GET");
  ASSERT_TRUE(m.entry);
  EXPECT_EQ(m.route->name, "global_dedup");

  m = router.match("/v1/stats", "HEAD");
  EXPECT_TRUE(m.entry);
}

TEST(Router, WrongMethodAndUnknownPath) {
  Router router(routes::api_routes());
  auto m = router.match("/v1/admin/rescan", "GET");
  ASSERT_TRUE(m.route);
  EXPECT_FALSE(m.entry);
  EXPECT_EQ(Router::allow(*m.route), "POST");
  EXPECT_FALSE(router.match("/v1/nothing", "GET").route);
  EXPECT_FALSE(router.match("/v1/chun", "GET").route);
  EXPECT_FALSE(router.match("", "GET").route);
}

TEST(Router, AdminRoutesAreExactlyTheDocumentedOnes) {
  Router router(routes::api_routes());
  std::vector<std::string> admin;
  for (const auto& r : router.routes())
    for (const auto& e : r.methods)
      if (e.access == Access::admin) admin.push_back(std::string(e.method) + " " + std::string(r.path));
  EXPECT_EQ(admin,
            (std::vector<std::string>{"DELETE /v1/shard/", "POST /v1/admin/rescan", "POST /v1/admin/reload",
                                      "POST /v1/admin/index/rebuild", "POST /v1/admin/purge", "POST /v1/admin/ingest",
                                      "POST /v1/admin/restore/", "POST /v1/admin/export",
                                      "POST /v1/admin/fleet/forget-host/", "POST /v1/admin/fleet/retry"}));
}

// What only the local Xet endpoint (or an admin) may send: a shard to learn,
// and its downloads (a reconstruction to rewrite, a range URL to check).
TEST(Router, EndpointRoutesAreExactlyTheLearningAndDownloadOnes) {
  Router router(routes::api_routes());
  std::vector<std::string> endpoint;
  for (const auto& r : router.routes())
    for (const auto& e : r.methods)
      if (e.access == Access::endpoint) endpoint.push_back(std::string(e.method) + " " + std::string(r.path));
  EXPECT_EQ(endpoint, (std::vector<std::string>{"POST /v1/xet-endpoint/shards/", "GET /v1/xet-endpoint/reconstruction",
                                                "GET /v1/xet-endpoint/grant", "GET /v1/xet-endpoint/fill"}));
}

const std::string kA(64, 'a');
const std::string kB = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

std::vector<shard::Hash> ok(const HashBatch& b) {
  EXPECT_TRUE(std::holds_alternative<std::vector<shard::Hash>>(b))
      << (std::holds_alternative<std::string>(b) ? std::get<std::string>(b) : "");
  return std::holds_alternative<std::vector<shard::Hash>>(b) ? std::get<std::vector<shard::Hash>>(b)
                                                             : std::vector<shard::Hash>{};
}
std::string err(const HashBatch& b) {
  EXPECT_TRUE(std::holds_alternative<std::string>(b));
  return std::holds_alternative<std::string>(b) ? std::get<std::string>(b) : "";
}

TEST(BatchParser, PlainAndSpacedForms) {
  auto h = ok(parse_hash_batch("{\"hashes\":[\"" + kA + "\",\"" + kB + "\"]}", 10));
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[1].to_string(), kB);
  h = ok(parse_hash_batch(" {\n \"hashes\" : [ \"" + kA + "\" ,\n \"" + kB + "\" ] }\n", 10));
  EXPECT_EQ(h.size(), 2u);
  EXPECT_TRUE(ok(parse_hash_batch("{\"hashes\":[]}", 10)).empty());
  // Uppercase hex is a hash too.
  std::string upper(64, 'A');
  EXPECT_EQ(ok(parse_hash_batch("{\"hashes\":[\"" + upper + "\"]}", 10)).size(), 1u);
}

TEST(BatchParser, EscapesAreDecodedAndOtherFieldsRefused) {
  std::string escaped = kA;
  escaped.replace(0, 1, "\\u0061");
  auto h = ok(parse_hash_batch("{\"hashes\":[\"" + escaped + "\"]}", 10));
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].to_string(), kA);
  EXPECT_NE(err(parse_hash_batch("{\"x\":1,\"hashes\":[\"" + kA + "\"]}", 10)).find("unknown field \"x\""),
            std::string::npos);
  EXPECT_NE(err(parse_hash_batch("{\"hashes\":[],\"hashes\":[]}", 10)).find("twice"), std::string::npos);
}

// Bytes in pieces of any size give the same hashes as the whole body.
TEST(BatchParser, PiecesOfAnySizeGiveTheSameHashes) {
  struct Sink : HashSink {
    std::vector<shard::Hash> got;
    bool put(const shard::Hash& h) override {
      got.push_back(h);
      return true;
    }
  };
  const std::string json = " {\n \"hashes\" : [ \"" + kA + "\" ,\n \"" + kB + "\",\"" + kB + "\" ] }\n";
  const std::string lines = kA + "\n\n  " + kB + " \r\n" + kB;
  for (auto [form, body] : {std::pair{HashStreamParser::Form::json, json}, {HashStreamParser::Form::lines, lines}})
    for (std::size_t piece = 1; piece <= body.size(); ++piece) {
      HashStreamParser p(form);
      Sink sink;
      for (std::size_t at = 0; at < body.size(); at += piece)
        ASSERT_TRUE(p.feed(std::string_view(body).substr(at, piece), sink)) << p.error();
      ASSERT_TRUE(p.finish(sink)) << p.error();
      ASSERT_EQ(sink.got.size(), 3u) << piece;
      EXPECT_EQ(sink.got[0].to_string(), kA);
      EXPECT_EQ(sink.got[2].to_string(), kB);
    }
}

TEST(BatchParser, LinesErrorsNameTheLine) {
  struct Sink : HashSink {
    bool put(const shard::Hash&) override { return true; }
  } sink;
  HashStreamParser p(HashStreamParser::Form::lines);
  EXPECT_FALSE(p.feed(kA + "\n" + kB + "\nxyz\n", sink));
  EXPECT_NE(p.error().find("line 3 is not a hash"), std::string::npos) << p.error();
  HashStreamParser two(HashStreamParser::Form::lines);
  EXPECT_FALSE(two.feed(kA + " " + kB + "\n", sink));
  EXPECT_NE(two.error().find("line 1 has more than one word"), std::string::npos) << two.error();
  HashStreamParser open(HashStreamParser::Form::json);
  EXPECT_TRUE(open.feed("{\"hashes\":[\"" + kA, sink));
  EXPECT_FALSE(open.finish(sink));
  EXPECT_NE(open.error().find("ends at byte"), std::string::npos) << open.error();
}

TEST(BatchParser, ErrorsSayWhatIsWrong) {
  EXPECT_NE(err(parse_hash_batch("", 10)).find("not valid JSON"), std::string::npos);
  EXPECT_NE(err(parse_hash_batch("[1]", 10)).find("hashes"), std::string::npos);
  EXPECT_NE(err(parse_hash_batch("{\"hashes\":[\"" + kA + "\",\"xyz\"]}", 10)).find("hashes[1]"), std::string::npos);
  EXPECT_NE(err(parse_hash_batch("{\"hashes\":[\"" + kA + "\",7]}", 10)).find("hashes[1] is not a string"),
            std::string::npos);
  EXPECT_NE(err(parse_hash_batch("{\"hashes\":[\"" + kA + "\",\"" + kA + "\"]}", 1)).find("too many"),
            std::string::npos);
  EXPECT_NE(err(parse_hash_batch("{\"hashes\":[\"" + kA + "\"]} trailing", 10)).find("not valid JSON"),
            std::string::npos);
}

}  // namespace
}  // namespace dedupd::daemon::api::http
