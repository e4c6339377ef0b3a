// What `inspect` shows of a shard (cli/shard_inspect): the JSON document of
// the real fixture, its footer facts and known keyed answers, the human form
// aligned and complete, every chunk on request, files with their terms,
// verification and sha256, and an upload shard without a footer.
#include "cli/shard_inspect.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support.hpp"

namespace dedupctl {
namespace {

using testing::fixture;
using testing::kFixture;
using testing::run_cli;
using testing::shard_with_file;
using testing::TempDir;

TEST(Inspect, JsonOfTheFixtureMatchesItsExpectedHashes) {
  auto r = run_cli({"inspect", "--json", fixture(kFixture)});
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json got = nlohmann::json::parse(r.out);
  nlohmann::json expected = nlohmann::json::parse(testing::read_file(fixture(kFixture + ".json")));
  EXPECT_EQ(got["hmac_key"], expected["hmac_key"]);
  ASSERT_EQ(got["xorbs"].size(), expected["xorbs"].size());
  for (std::size_t i = 0; i < expected["xorbs"].size(); ++i) {
    EXPECT_EQ(got["xorbs"][i]["hash"], expected["xorbs"][i]["hash"]);
    EXPECT_EQ(got["xorbs"][i]["chunk_hashes"], expected["xorbs"][i]["chunk_hashes"]);
  }
}

TEST(Inspect, JsonCarriesTheFooterFacts) {
  auto r = run_cli({"--json", "inspect", fixture(kFixture)});
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json d = nlohmann::json::parse(r.out);
  EXPECT_EQ(d["size"], 102104);
  EXPECT_EQ(d["header"]["version"], 2);
  EXPECT_EQ(d["header"]["footer_size"], 200);
  EXPECT_EQ(d["footer"]["creation_timestamp"], 1754059905);
  EXPECT_EQ(d["footer"]["created"], "2025-08-01T14:51:45Z");
  EXPECT_EQ(d["footer"]["expiry"], 1754664705);
  EXPECT_EQ(d["footer"]["expires"], "2025-08-08T14:51:45Z");
  EXPECT_EQ(d["keyed"], true);
  EXPECT_EQ(d["counts"]["xorbs"], 3);
  EXPECT_EQ(d["counts"]["chunks"], 2117);
  EXPECT_EQ(d["counts"]["files"], 0);
  EXPECT_EQ(d["lookup"]["chunks"], 0);
  // The keyed known answer: xorb #1 chunk #0 is the raw chunk 9502eec1...
  EXPECT_EQ(d["xorbs"][1]["hash"], "213031765f0b4d7bc826ccd5bdda3261f624187e2997a2de61111652d31b081c");
  EXPECT_EQ(d["xorbs"][1]["chunk_hashes"][0], "81b34a5179857460a1a5ba079fcf7231c307a19940ccb769e49240df5ec6c466");
  EXPECT_EQ(d["xorbs"][1]["chunks"][0]["byte_start"], 0);
}

TEST(Inspect, HumanOutputIsAlignedAndComplete) {
  auto r = run_cli({"inspect", fixture(kFixture)});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Size           102,104 bytes (99.7 KiB)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Created        2025-08-01T14:51:45Z (unix 1754059905"), std::string::npos);
  EXPECT_NE(r.out.find("Expires        2025-08-08T14:51:45Z (unix 1754664705"), std::string::npos);
  EXPECT_NE(r.out.find("Contents       0 files (0 terms), 3 xorbs, 2,117 chunks\n"), std::string::npos);
  EXPECT_NE(r.out.find("  1  213031765f0b4d7bc826ccd5bdda3261f624187e2997a2de61111652d31b081c   1,062  64.0 MiB"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("\x1b["), std::string::npos) << "no colour when not a terminal";
  EXPECT_EQ(r.out.find(" \n"), std::string::npos) << "no trailing blanks";
}

TEST(Inspect, ChunksListsEveryChunk) {
  auto r = run_cli({"inspect", "--chunks", fixture(kFixture)});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("81b34a5179857460a1a5ba079fcf7231c307a19940ccb769e49240df5ec6c466"), std::string::npos);
}

TEST(Inspect, FilesWithTermsAndSha256) {
  TempDir dir;
  auto bytes = shard_with_file(true);
  testing::write_file(dir / "a.mdb", std::string(bytes.begin(), bytes.end()));
  auto r = run_cli({"inspect", "--json", dir / "a.mdb"});
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json d = nlohmann::json::parse(r.out);
  ASSERT_EQ(d["files"].size(), 1u);
  EXPECT_EQ(d["files"][0]["sha256"], std::string(64, 'a'));
  EXPECT_EQ(d["files"][0]["verification"], true);
  EXPECT_EQ(d["files"][0]["size"], 3000);
  ASSERT_EQ(d["files"][0]["terms"].size(), 1u);
  EXPECT_EQ(d["files"][0]["terms"][0]["chunk_end"], 3);
  EXPECT_TRUE(d["files"][0]["terms"][0].contains("range_hash"));
  EXPECT_EQ(d["footer"]["expiry"], nullptr);
  EXPECT_EQ(d["footer"]["expires"], "never");
  EXPECT_EQ(d["keyed"], false);
  EXPECT_EQ(d["lookup"]["files"], 1);
  EXPECT_EQ(d["lookup"]["chunks"], 3);

  auto h = run_cli({"inspect", dir / "a.mdb"});
  ASSERT_EQ(h.code, 0);
  EXPECT_NE(h.out.find("Expires        never"), std::string::npos) << h.out;
  EXPECT_NE(h.out.find("sha256 " + std::string(64, 'a')), std::string::npos) << h.out;
  EXPECT_NE(h.out.find("2.9 KiB, 1 term, verified"), std::string::npos) << h.out;
}

TEST(Inspect, UploadShardWithoutFooter) {
  TempDir dir;
  auto bytes = shard_with_file(false);
  testing::write_file(dir / "u.mdb", std::string(bytes.begin(), bytes.end()));
  auto r = run_cli({"inspect", "--json", dir / "u.mdb"});
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json d = nlohmann::json::parse(r.out);
  EXPECT_EQ(d["footer"], nullptr);
  EXPECT_EQ(d["hmac_key"], nullptr);
  auto h = run_cli({"inspect", dir / "u.mdb"});
  EXPECT_NE(h.out.find("none (upload shard)"), std::string::npos);
}

}  // namespace
}  // namespace dedupctl
