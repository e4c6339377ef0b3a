// The offline verbs (cli/offline): inspect's and verify's exit codes and
// output modes, verify's findings, usage. What inspect shows of a shard is in
// shard_inspect_test.cpp.
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
