// The routing table and the batch body parser, without a socket.
#include <gtest/gtest.h>

#include "api/routes.hpp"
#include "daemon/api/batch_request.hpp"
#include "daemon/api/router.hpp"
#include "daemon/api/routes.hpp"

namespace dedupd::daemon::http {
namespace {

TEST(Router, MatchesExactPrefixAndMethod) {
  Router router(api_routes());
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
  Router router(api_routes());
  auto m = router.match("/v1/admin/rescan", "GET");
  ASSERT_TRUE(m.route);
  EXPECT_FALSE(m.entry);
  EXPECT_EQ(Router::allow(*m.route), "POST");
  EXPECT_FALSE(router.match("/v1/nothing", "GET").route);
  EXPECT_FALSE(router.match("/v1/chun", "GET").route);
  EXPECT_FALSE(router.match("", "GET").route);
}

TEST(Router, AdminRoutesAreExactlyTheDocumentedOnes) {
  Router router(api_routes());
  std::vector<std::string> admin;
  for (const auto& r : router.routes())
    for (const auto& e : r.methods)
      if (e.access == Access::admin) admin.push_back(std::string(e.method) + " " + std::string(r.path));
  EXPECT_EQ(admin, (std::vector<std::string>{"DELETE /v1/shard/", "POST /v1/admin/rescan", "POST /v1/admin/purge",
                                             "POST /v1/admin/ingest", "POST /v1/admin/export",
                                             "POST /v1/admin/fleet/forget-host/"}));
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

TEST(BatchParser, OtherJsonFormsGoThroughTheFullParser) {
  auto h = ok(parse_hash_batch("{\"x\":1,\"hashes\":[\"" + kA + "\"]}", 10));
  EXPECT_EQ(h.size(), 1u);
  std::string escaped = kA;
  escaped.replace(0, 1, "\\u0061");
  h = ok(parse_hash_batch("{\"hashes\":[\"" + escaped + "\"]}", 10));
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].to_string(), kA);
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
}  // namespace dedupd::daemon::http
