// inspect and verify against the real fixture and hand-made shards.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/shard_inspect.hpp"
#include "shard/keys.hpp"
#include "shard/writer.hpp"
#include "support.hpp"

namespace dedupctl {
namespace {

using testing::fixture;
using testing::run_cli;
using testing::TempDir;
namespace shard = dedupd::shard;

const std::string kFixture = "gpt2-64-8bits.tflite.shard";

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

TEST(Inspect, ColourOnATerminalUnlessNoColor) {
  testing::RunOptions o;
  o.tty = true;
  auto tty = run_cli({"inspect", fixture(kFixture)}, o);
  EXPECT_NE(tty.out.find("\x1b["), std::string::npos);
  o.env["NO_COLOR"] = "1";
  auto no = run_cli({"inspect", fixture(kFixture)}, o);
  EXPECT_EQ(no.out.find("\x1b["), std::string::npos);
}

TEST(Inspect, QuietPrintsNothing) {
  auto r = run_cli({"-q", "inspect", fixture(kFixture)});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "");
}

// A shard with a file: terms, verification, sha256, and a zero key.
std::vector<std::uint8_t> shard_with_file(bool with_footer) {
  shard::ShardWriter w;
  auto [x, leaves] = testing::small_xorb(1);
  shard::FileRecord f;
  f.header.file_hash = shard::file_hash(leaves);
  shard::FileTerm t;
  t.xorb_hash = x.header.xorb_hash;
  t.chunk_start = 0;
  t.chunk_end = 3;
  t.unpacked_bytes = 3000;
  f.terms.push_back(t);
  std::vector<shard::Hash> raw = {leaves[0].hash, leaves[1].hash, leaves[2].hash};
  shard::HashRecord v;
  v.hash = shard::verification_range_hash(raw);
  f.verification.push_back(v);
  shard::HashRecord sha;
  sha.hash = shard::Hash::parse_hex_bytes(std::string(64, 'a')).value();
  f.metadata_ext = sha;
  w.add_xorb(x);
  w.add_file(f);
  shard::WriteOptions o;
  o.with_footer = with_footer;
  o.lookup_tables = shard::LookupTables::build;
  o.footer.creation_timestamp = 1754059905;
  o.footer.key_expiry = shard::kNoExpiry;
  return w.write(o);
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

TEST(Inspect, MissingOrInvalidFileIsBadInput) {
  auto missing = run_cli({"inspect", "/nonexistent/x.mdb"});
  EXPECT_EQ(missing.code, 65);
  EXPECT_NE(missing.err.find("/nonexistent/x.mdb"), std::string::npos);
  TempDir dir;
  testing::write_file(dir / "junk", "not a shard at all, but long enough to have a header ..........");
  auto junk = run_cli({"inspect", dir / "junk"});
  EXPECT_EQ(junk.code, 65);
  EXPECT_NE(junk.err.find("header.magic at offset 0"), std::string::npos) << junk.err;
}

TEST(Verify, CleanShardExitsZero) {
  auto r = run_cli({"verify", fixture(kFixture)});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(": ok"), std::string::npos);
  auto j = run_cli({"verify", "--json", fixture(kFixture)});
  EXPECT_EQ(j.code, 0);
  EXPECT_EQ(nlohmann::json::parse(j.out)["ok"], true);
  EXPECT_EQ(nlohmann::json::parse(j.out)["problems"], nlohmann::json::array());
}

TEST(Verify, TruncatedShardNamesRuleAndOffset) {
  TempDir dir;
  std::string bytes = testing::read_file(fixture(kFixture));
  testing::write_file(dir / "t.mdb", bytes.substr(0, 5000));
  auto r = run_cli({"verify", dir / "t.mdb"});
  EXPECT_EQ(r.code, 65);
  // One line per problem: "rule at offset N: message".
  ASSERT_FALSE(r.out.empty());
  EXPECT_NE(r.out.find(" at offset "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.back(), '\n');
  auto j = run_cli({"verify", "--json", dir / "t.mdb"});
  EXPECT_EQ(j.code, 65);
  nlohmann::json d = nlohmann::json::parse(j.out);
  EXPECT_EQ(d["ok"], false);
  ASSERT_GE(d["problems"].size(), 1u);
  EXPECT_TRUE(d["problems"][0]["rule"].is_string());
  EXPECT_TRUE(d["problems"][0]["offset"].is_number_unsigned());
}

TEST(Verify, BadMagicIsOneLine) {
  TempDir dir;
  std::string bytes = testing::read_file(fixture(kFixture));
  bytes[0] = 'X';
  testing::write_file(dir / "m.mdb", bytes);
  auto r = run_cli({"verify", dir / "m.mdb"});
  EXPECT_EQ(r.code, 65);
  EXPECT_EQ(r.out.rfind("header.magic at offset 0: ", 0), 0u) << r.out;
}

TEST(Usage, NoVerbOrUnknownOptionIs64) {
  EXPECT_EQ(run_cli({}).code, 64);
  EXPECT_EQ(run_cli({"inspect"}).code, 64);
  EXPECT_EQ(run_cli({"inspect", "--bogus", "x"}).code, 64);
}

TEST(Usage, HelpAndVersionAreZero) {
  auto h = run_cli({"--help"});
  EXPECT_EQ(h.code, 0);
  EXPECT_NE(h.out.find("inspect"), std::string::npos);
  auto v = run_cli({"--version"});
  EXPECT_EQ(v.code, 0);
  EXPECT_NE(v.out.find("dedupctl "), std::string::npos);
}

}  // namespace
}  // namespace dedupctl

namespace dedupctl {
namespace {

TEST(Verify, ReportsEveryIntegrityProblemOnItsOwnLine) {
  TempDir dir;
  auto bytes = shard_with_file(true);
  // Damage two chunk hashes: the xorb hash no longer matches its chunks
  // and the file's verification entry no longer matches either.
  const std::uint64_t first_chunk = 48 + 48 * 4 /* header, file block */ + 48 /* bookend */ + 48;
  bytes[first_chunk] ^= 0xff;
  testing::write_file(dir / "d.mdb", std::string(bytes.begin(), bytes.end()));
  auto r = run_cli({"verify", dir / "d.mdb"});
  EXPECT_EQ(r.code, 65) << r.out << r.err;
  std::size_t lines = 0;
  for (char c : r.out) lines += c == '\n';
  EXPECT_GE(lines, 2u) << r.out;
  EXPECT_NE(r.out.find("integrity."), std::string::npos) << r.out;
}

TEST(Verify, FileNameMustBeTheShardHash) {
  TempDir dir;
  std::string bytes = testing::read_file(fixture(kFixture));
  const std::string wrong = std::string(64, '0') + ".mdb";
  testing::write_file(dir / wrong, bytes);
  auto r = run_cli({"verify", dir / wrong});
  EXPECT_EQ(r.code, 65);
  EXPECT_NE(r.out.find("integrity.file_name at offset 0: "), std::string::npos) << r.out;
  auto ok = run_cli({"inspect", "--json", fixture(kFixture)});
  const std::string right = nlohmann::json::parse(ok.out)["shard_hash"].get<std::string>() + ".mdb";
  testing::write_file(dir / right, bytes);
  EXPECT_EQ(run_cli({"verify", dir / right}).code, 0);
}

}  // namespace
}  // namespace dedupctl
