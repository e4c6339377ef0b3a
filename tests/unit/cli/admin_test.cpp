// The admin verbs (cli/admin): rescan, purge, remove and ingest against a
// fake daemon, the request each sends and its exit code when refused.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "fake_daemon.hpp"
#include "support.hpp"

namespace dedupctl {
namespace {

using namespace testing::verb_test;
// Unordered, not dedupctl::json; under a name of its own, or a batch of
// several test files sees two json in dedupctl.
using Json = nlohmann::json;

TEST(Admin, RescanPurgeRemove) {
  Json purge = {{"dry_run", true}, {"expired", {shard_summary("live")}}, {"deleted_files", {"/x/" + kShard + ".mdb"}}};
  auto d =
      daemon_with({{"POST /v1/admin/rescan", http(200, R"({"scanned":10,"ingested":7,"rejected":1})")},
                   {"POST /v1/admin/purge?dry_run=1", http(200, purge.dump())},
                   {"POST /v1/admin/purge", http(200, R"({"dry_run":false,"expired":[],"deleted_files":[]})")},
                   {"DELETE /v1/shard/" + kShard, http(200, Json({{"removed", shard_summary("removed")}}).dump())}});
  auto r = run_cli(with(d, {"rescan"}));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "scanned 10 files: 7 ingested, 1 rejected\n");
  auto p = run_cli(with(d, {"purge", "--dry-run"}));
  EXPECT_EQ(p.code, 0) << p.err;
  EXPECT_NE(p.out.find("would expire 1 shard:"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("would delete 1 file past their grace period"), std::string::npos) << p.out;
  auto p2 = run_cli(with(d, {"purge"}));
  EXPECT_EQ(p2.out, "nothing was due: no shard expired\n");
  auto rm = run_cli(with(d, {"remove", kShard}));
  EXPECT_EQ(rm.code, 0) << rm.err;
  EXPECT_NE(rm.out.find("removed shard " + kShard), std::string::npos);
  auto gone = run_cli(with(d, {"remove", kFile}));
  EXPECT_EQ(gone.code, 1);
  EXPECT_EQ(run_cli(with(d, {"remove", "nope"})).code, 65);
}

TEST(Admin, ForbiddenIs77WithTheDaemonsMessage) {
  auto d = FakeDaemon([](const Request&) {
    return http_error(403, "forbidden", "uid 1000 is neither root nor in group dedupd-admin");
  });
  for (std::vector<std::string> verb : {std::vector<std::string>{"rescan"}, {"purge"}, {"remove", kShard}}) {
    auto r = run_cli(with(d, verb));
    EXPECT_EQ(r.code, 77) << verb[0];
    EXPECT_NE(r.err.find("group dedupd-admin"), std::string::npos) << r.err;
  }
}

TEST(Admin, IngestSendsTheBytesAndItsName) {
  const std::string bytes = testing::read_file(testing::fixture("gpt2-64-8bits.tflite.shard"));
  FakeDaemon d([&](const Request& r) {
    EXPECT_EQ(r.method, "POST");
    EXPECT_EQ(r.target, "/v1/admin/ingest?name=my%20shard.mdb");
    EXPECT_EQ(r.headers.at("content-type"), "application/octet-stream");
    if (r.body != bytes) return http_error(422, "invalid_shard", "header.magic at offset 0: not a shard");
    return http(
        200,
        Json({{"shards", {{{"hash", kShard}, {"added", true}, {"xorbs", 3}, {"chunks", 2117}, {"files", 0}}}}}).dump());
  });
  testing::TempDir dir;
  testing::write_file(dir / "my shard.mdb", bytes);
  auto r = run_cli(with(d, {"ingest", dir / "my shard.mdb"}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(kShard + "  added      0      3   2,117"), std::string::npos) << r.out;
  testing::write_file(dir / "my shard.mdb", "junk");
  auto bad = run_cli(with(d, {"ingest", dir / "my shard.mdb"}));
  EXPECT_EQ(bad.code, 65);
  EXPECT_NE(bad.err.find("header.magic at offset 0"), std::string::npos) << bad.err;
  EXPECT_EQ(run_cli(with(d, {"ingest", dir / "missing"})).code, 65);
}

TEST(Admin, IngestOverTheLimitIsRefusedBeforeTheBody) {
  FakeDaemon d([](const Request&) { return http(200, R"({"shards":[]})"); });
  d.on_expect([](const Request& r) {
    EXPECT_EQ(r.body, "");
    return http_error(413, "too_large", "body of " + r.headers.at("content-length") + " bytes over the 1 MiB limit");
  });
  testing::TempDir dir;
  testing::write_file(dir / "big.mdb", std::string(4 << 20, 'x'));
  auto r = run_cli(with(d, {"ingest", dir / "big.mdb"}));
  EXPECT_EQ(r.code, 65) << r.err;
  EXPECT_NE(r.err.find("over the 1 MiB limit"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace dedupctl
