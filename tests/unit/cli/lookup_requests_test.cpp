// The lookup verbs' requests and human answers (cli/lookup_requests) against
// a fake daemon answering the documented shapes (docs/API.md): a xorb with
// its chunks, shards and other forms, a file with its terms and sha256, the
// files of a sha256, one shard's summary; not found as exit 1. The query
// verb's transport and its exit codes are in client_test.cpp.
#include "cli/lookup_requests.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <nlohmann/json.hpp>

#include "fake_daemon.hpp"
#include "support.hpp"

namespace dedupctl {
namespace {

using namespace testing::verb_test;
// Unordered, not dedupctl::json; under a name of its own, or a batch of
// several test files sees two json in dedupctl.
using Json = nlohmann::json;

TEST(Xorb, ShowsChunksAndShards) {
  Json doc = {{"xorb", kXorb},
              {"num_chunks", 2},
              {"bytes_in_xorb", 2048},
              {"bytes_on_disk", 1000},
              {"keyed", true},
              {"chunks",
               {{{"index", 0}, {"hash", kFile}, {"byte_start", 0}, {"unpacked_bytes", 1024}, {"flags", 2147483648u}},
                {{"index", 1}, {"hash", kSha}, {"byte_start", 1024}, {"unpacked_bytes", 1024}, {"flags", 0}}}},
              {"shards", {{{"shard", kShard}, {"expiry", nullptr}, {"keyed", true}}}}};
  auto d = daemon_with({{"GET /v1/xorb/" + kXorb, http(200, doc.dump())}});
  auto r = run_cli(with(d, {"xorb", "--chunks", kXorb}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Chunks        2\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2.0 KiB unpacked, 1000 B on disk"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(kShard + "  keyed, expires never"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1  " + kSha + "  1,024  1,024"), std::string::npos) << r.out;
  auto j = run_cli(with(d, {"--json", "xorb", kXorb}));
  EXPECT_EQ(Json::parse(j.out), doc);
}

TEST(Xorb, UnknownIsExit1) {
  auto d = daemon_with({});
  auto r = run_cli(with(d, {"xorb", kXorb}));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("not found"), std::string::npos);
  auto j = run_cli(with(d, {"--json", "xorb", kXorb}));
  EXPECT_EQ(j.code, 1);
  EXPECT_EQ(Json::parse(j.out)["error"]["code"], "not_found");
}

TEST(File, ShowsTermsAndSha256) {
  Json doc = {{"file", kFile},
              {"size", 3000},
              {"sha256", kSha},
              {"verification", true},
              {"terms", {{{"xorb", kXorb}, {"chunk_start", 0}, {"chunk_end", 3}, {"unpacked_bytes", 3000}}}},
              {"shards", {kShard}}};
  auto d = daemon_with({{"GET /v1/file/" + kFile, http(200, doc.dump())}});
  auto r = run_cli(with(d, {"file", kFile}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("SHA-256       " + kSha), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  0  " + kXorb + "    0..3   2.9 KiB"), std::string::npos) << r.out;
  EXPECT_EQ(Json::parse(run_cli(with(d, {"--json", "file", kFile})).out), doc);
}

TEST(Sha256, ListsFileHashesAndTakesPlainHex) {
  Json doc = {{"sha256", kSha}, {"files", {kFile}}};
  auto d = daemon_with({{"GET /v1/sha256/" + kSha, http(200, doc.dump())}});
  std::string upper = kSha;
  for (auto& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
  auto r = run_cli(with(d, {"sha256", upper}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, kFile + "\n");
  EXPECT_EQ(run_cli(with(d, {"sha256", "abc"})).code, 65);
  auto none = daemon_with({});
  EXPECT_EQ(run_cli(with(none, {"sha256", kSha})).code, 1);
}

TEST(Shard, OneSummary) {
  auto d = daemon_with({{"GET /v1/shard/" + kShard, http(200, shard_summary("rejected").dump())}});
  auto r = run_cli(with(d, {"shard", kShard}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("State     rejected"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Reason    header.magic at offset 0: not a shard"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Size      102,104 bytes (99.7 KiB)"), std::string::npos) << r.out;
}

TEST(Xorb, OtherFormsAreListed) {
  Json form = {{"xorb", kXorb},
               {"num_chunks", 0},
               {"bytes_in_xorb", 0},
               {"bytes_on_disk", 0},
               {"keyed", true},
               {"chunks", Json::array()},
               {"shards", {{{"shard", kShard}, {"expiry", 1754664705}, {"keyed", true}}}}};
  Json doc = form;
  doc["keyed"] = false;
  doc["shards"] = Json::array();
  // Json::array: a braced single element is an array under g++ and a copy of
  // the element under clang (nlohmann-json and CWG 2137).
  doc["other_forms"] = Json::array({form});
  auto d = daemon_with({{"GET /v1/xorb/" + kXorb, http(200, doc.dump())}});
  auto r = run_cli(with(d, {"xorb", kXorb}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Other form    keyed, shard " + kShard), std::string::npos) << r.out;
}

}  // namespace
}  // namespace dedupctl
