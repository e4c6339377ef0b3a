// The routing table, without a socket. The batch body parser is in
// batch_request_test.cpp.
#include <gtest/gtest.h>

#include "api/routes.hpp"
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
                                                "GET /v1/xet-endpoint/grant", "GET /v1/xet-endpoint/object-digest",
                                                "GET /v1/xet-endpoint/fill"}));
}

}  // namespace
}  // namespace dedupd::daemon::api::http
