// dedup-shard (cli/dedup_shard): the global-dedup reply written to a file
// and what it holds said, an invalid reply refused with nothing written.
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

TEST(DedupShard, WritesTheReplyAndSaysWhatItHolds) {
  const std::string bytes = testing::read_file(testing::fixture("gpt2-64-8bits.tflite.shard"));
  const std::string chunk = "9502eec19d4b0c9f7b389228fa801f68ecdf15d69ccd1da2f9ddbd0219898335";
  auto d = daemon_with({{"GET /v1/chunks/default-merkledb/" + chunk, http(200, bytes, "application/octet-stream")}});
  testing::TempDir dir;
  auto r = run_cli(with(d, {"dedup-shard", chunk, "-o", dir / "reply.mdb"}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(testing::read_file(dir / "reply.mdb"), bytes);
  EXPECT_NE(r.out.find("Wrote       102,104 bytes to " + (dir / "reply.mdb")), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Holds       3 xorbs, 2,117 chunks"), std::string::npos) << r.out;
  auto j = run_cli(with(d, {"--json", "dedup-shard", chunk, "-o", dir / "r2.mdb"}));
  Json doc = Json::parse(j.out);
  EXPECT_EQ(doc["chunks"], 2117);
  EXPECT_EQ(doc["hmac_key"], "d6834b04843aaf16f29903e2428a99be635099f9ea5056cc4e95e7ec8a41509f");
  EXPECT_EQ(doc["expiry"], 1754664705);
  // -o -: the shard on stdout, the summary on stderr.
  auto s = run_cli(with(d, {"dedup-shard", chunk, "-o", "-"}));
  EXPECT_EQ(s.out, bytes);
  EXPECT_NE(s.err.find("Holds"), std::string::npos);
}

TEST(DedupShard, InvalidReplyIs76AndWritesNothing) {
  const std::string chunk(64, '1');
  auto d =
      daemon_with({{"GET /v1/chunks/default-merkledb/" + chunk, http(200, "garbage", "application/octet-stream")}});
  testing::TempDir dir;
  auto r = run_cli(with(d, {"dedup-shard", chunk, "-o", dir / "x.mdb"}));
  EXPECT_EQ(r.code, 76);
  EXPECT_NE(r.err.find("invalid shard"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "x.mdb"));
  auto none = daemon_with({});
  EXPECT_EQ(run_cli(with(none, {"dedup-shard", chunk, "-o", dir / "x.mdb"})).code, 1);
  EXPECT_EQ(run_cli(with(none, {"dedup-shard", chunk})).code, 64) << "-o is required";
}

}  // namespace
}  // namespace dedupctl
