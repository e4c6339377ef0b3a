// bundle create / bundle list / inspect of a .caf bundle: round trips, a
// bundle laid out by hand as the Go implementation (gocaf) writes it, and
// the bad files a reader must refuse with the rule and offset (exit 65).
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "shard/caf.hpp"
#include "shard/keys.hpp"
#include "shard/writer.hpp"
#include "support.hpp"

namespace dedupctl {
namespace {

using testing::fixture;
using testing::read_file;
using testing::run_cli;
using testing::TempDir;
using testing::write_file;
namespace shard = dedupd::shard;
namespace fs = std::filesystem;

// A small valid shard; `seed` makes its chunk hashes (and bytes) distinct.
std::string small_shard(std::uint8_t seed) {
  shard::ShardWriter w;
  w.add_xorb(testing::small_xorb(std::uint8_t(seed * 16)).record);
  shard::WriteOptions o;
  o.footer.creation_timestamp = 1700000000;
  auto b = w.write(o);
  return std::string(b.begin(), b.end());
}

// data + index + u32 LE index size: how every CAF writer finishes.
std::string assemble(const std::string& data, const std::string& index) {
  std::string out = data + index;
  const auto n = std::uint32_t(index.size());
  for (int k = 0; k < 4; ++k) out.push_back(char(n >> (8 * k)));
  return out;
}

nlohmann::json run_json(const std::vector<std::string>& args, int expect = 0) {
  auto r = run_cli(args);
  EXPECT_EQ(r.code, expect) << r.err;
  try {
    return nlohmann::json::parse(r.out);
  } catch (const std::exception&) {
    ADD_FAILURE() << "not JSON: " << r.out << r.err;
    return nlohmann::json();
  }
}

std::size_t files_in(const std::string& dir) {
  return std::size_t(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

TEST(Bundle, CreateListInspectRoundTrip) {
  TempDir d;
  const std::string a = small_shard(1), b = small_shard(2);
  write_file(d / "a.mdb", a);
  write_file(d / "b.mdb", b);
  write_file(d / "fixture.shard", read_file(fixture("gpt2-64-8bits.tflite.shard")));

  auto r = run_cli({"bundle", "create", d / "out.caf", d / "b.mdb", d / "a.mdb", d / "fixture.shard"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("wrote " + (d / "out.caf") + ": 3 shards"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fixture.shard is member fixture.shard.mdb"), std::string::npos) << r.out;
  EXPECT_EQ(files_in(d.path()), 4u) << "no temporary file left";

  nlohmann::json list = run_json({"bundle", "list", "--json", d / "out.caf"});
  ASSERT_EQ(list["members"].size(), 3u);
  // Laid out in argument order; end exclusive.
  EXPECT_EQ(list["members"][0],
            (nlohmann::json{{"name", "b.mdb"}, {"start", 0}, {"end", b.size()}, {"size", b.size()}, {"shard", true}}));
  EXPECT_EQ(list["members"][1]["name"], "a.mdb");
  EXPECT_EQ(list["members"][1]["start"], b.size());
  EXPECT_EQ(list["members"][2]["name"], "fixture.shard.mdb");
  EXPECT_EQ(list["members"][2]["size"], 102104);
  EXPECT_EQ(list["format_version"], "1.0");
  EXPECT_EQ(list["data_size"], b.size() + a.size() + 102104);

  // Each member inspects exactly as the file it came from.
  nlohmann::json in = run_json({"--json", "inspect", d / "out.caf"});
  EXPECT_EQ(in["invalid"], 0);
  const std::vector<std::string> sources = {d / "b.mdb", d / "a.mdb", d / "fixture.shard"};
  for (std::size_t i = 0; i < 3; ++i) {
    nlohmann::json alone = run_json({"inspect", "--json", sources[i]});
    const nlohmann::json& m = in["members"][i];
    EXPECT_TRUE(m["valid"].get<bool>());
    EXPECT_EQ(m["inspect"]["shard_hash"], alone["shard_hash"]);
    EXPECT_EQ(m["inspect"]["xorbs"], alone["xorbs"]);
    EXPECT_EQ(m["inspect"]["footer"], alone["footer"]);
    EXPECT_EQ(m["inspect"]["path"], (d / "out.caf") + ":" + m["name"].get<std::string>());
  }

  auto human = run_cli({"inspect", d / "out.caf"});
  ASSERT_EQ(human.code, 0) << human.err;
  EXPECT_NE(human.out.find("Members  3 members: 3 shards, 0 others"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("Member fixture.shard.mdb (bytes "), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("213031765f0b4d7bc826ccd5bdda3261f624187e2997a2de61111652d31b081c"), std::string::npos);
  EXPECT_EQ(human.out.find(" \n"), std::string::npos) << "no trailing blanks";

  auto listed = run_cli({"bundle", "list", d / "out.caf"});
  ASSERT_EQ(listed.code, 0) << listed.err;
  EXPECT_NE(listed.out.find("NAME"), std::string::npos);
  EXPECT_NE(listed.out.find("fixture.shard.mdb"), std::string::npos);
  EXPECT_NE(listed.out.find("3 members: 3 shards, 0 others"), std::string::npos) << listed.out;
}

TEST(Bundle, AGoWrittenBundleListsAndInspectsAsOurs) {
  TempDir d;
  const std::string a = small_shard(3), b = small_shard(4);
  // gocaf adds b then "a<&>.mdb" then notes.txt; Go's json.Marshal sorts the
  // names bytewise and escapes <, >, &.
  const std::string index = R"({"format_version":"1.0","files":{"a\u003c\u0026\u003e.mdb":{"start_byte":)" +
                            std::to_string(b.size()) + R"(,"end_byte":)" + std::to_string(b.size() + a.size()) +
                            R"(},"b.mdb":{"start_byte":0,"end_byte":)" + std::to_string(b.size()) +
                            R"(},"notes.txt":{"start_byte":)" + std::to_string(b.size() + a.size()) +
                            R"(,"end_byte":)" + std::to_string(b.size() + a.size() + 5) + "}}}";
  write_file(d / "go.caf", assemble(b + a + "notes", index));

  // Ours, same members in the same order: the same bytes (write_bundle
  // writes the index as Go does).
  std::vector<std::uint8_t> bb(b.begin(), b.end()), ab(a.begin(), a.end()), nb{'n', 'o', 't', 'e', 's'};
  std::vector<shard::caf::MemberInput> members = {{"b.mdb", bb}, {"a<&>.mdb", ab}, {"notes.txt", nb}};
  auto ours = shard::caf::write_bundle(members);
  ASSERT_TRUE(ours.ok());
  write_file(d / "ours.caf", std::string(ours->begin(), ours->end()));
  EXPECT_EQ(read_file(d / "ours.caf"), read_file(d / "go.caf"));

  nlohmann::json go = run_json({"bundle", "list", "--json", d / "go.caf"});
  nlohmann::json mine = run_json({"bundle", "list", "--json", d / "ours.caf"});
  EXPECT_EQ(go["members"], mine["members"]);
  ASSERT_EQ(go["members"].size(), 3u);
  EXPECT_EQ(go["members"][1]["name"], "a<&>.mdb");
  EXPECT_EQ(go["members"][2], (nlohmann::json{{"name", "notes.txt"},
                                              {"start", b.size() + a.size()},
                                              {"end", b.size() + a.size() + 5},
                                              {"size", 5},
                                              {"shard", false}}));

  // inspect finds the bundle even without the .caf name.
  fs::copy_file(d / "go.caf", d / "go.bin");
  nlohmann::json in = run_json({"inspect", "--json", d / "go.bin"});
  EXPECT_EQ(in["format"], "caf");
  EXPECT_TRUE(in["members"][0]["valid"].get<bool>());
  EXPECT_FALSE(in["members"][2].contains("valid")) << "not a shard: listed, not inspected";
  auto human = run_cli({"inspect", d / "go.bin"});
  EXPECT_EQ(human.code, 0) << human.err;
  EXPECT_NE(human.out.find("other (not ingested)"), std::string::npos) << human.out;
}

TEST(Bundle, OneBadMemberIsReportedTheOthersInspected) {
  TempDir d;
  const std::string good = small_shard(5);
  std::string bad = small_shard(6);
  bad[0] ^= 0x55;  // header magic
  std::vector<std::uint8_t> g(good.begin(), good.end()), b(bad.begin(), bad.end());
  std::vector<shard::caf::MemberInput> members = {{"good.mdb", g}, {"bad.mdb", b}};
  auto bytes = shard::caf::write_bundle(members);
  ASSERT_TRUE(bytes.ok());
  write_file(d / "mixed.caf", std::string(bytes->begin(), bytes->end()));
  auto r = run_cli({"inspect", "--json", d / "mixed.caf"});
  EXPECT_EQ(r.code, 65);
  nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["invalid"], 1);
  EXPECT_TRUE(doc["members"][0]["valid"].get<bool>());
  EXPECT_FALSE(doc["members"][1]["valid"].get<bool>());
  EXPECT_EQ(doc["members"][1]["error"]["rule"], "header.magic");
  EXPECT_EQ(doc["members"][1]["error"]["bundle_offset"], good.size());
  EXPECT_NE(r.err.find("member bad.mdb: header.magic at offset 0"), std::string::npos) << r.err;
  // A bundle is listed whatever its members hold.
  EXPECT_EQ(run_cli({"bundle", "list", d / "mixed.caf"}).code, 0);
}

TEST(Bundle, BadBundlesAreRefusedWithRuleAndOffset) {
  TempDir d;
  write_file(d / "short.caf", "ab");
  auto r = run_cli({"bundle", "list", d / "short.caf"});
  EXPECT_EQ(r.code, 65);
  EXPECT_NE(r.err.find("footer.truncated"), std::string::npos) << r.err;

  write_file(d / "range.caf",
             assemble("xyz", R"({"format_version":"1.0","files":{"a.mdb":{"start_byte":0,"end_byte":9}}})"));
  r = run_cli({"inspect", d / "range.caf"});
  EXPECT_EQ(r.code, 65);
  EXPECT_NE(r.err.find("member.range at offset"), std::string::npos) << r.err;

  write_file(d / "dots.caf",
             assemble("xyz", R"({"format_version":"1.0","files":{"../a.mdb":{"start_byte":0,"end_byte":3}}})"));
  r = run_cli({"bundle", "list", "--json", d / "dots.caf"});
  EXPECT_EQ(r.code, 65);
  EXPECT_NE(r.err.find("member.name"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");

  // Not a shard and not a bundle: inspect reports it as a shard.
  write_file(d / "junk", "not a shard at all, but long enough to have a header ..........");
  r = run_cli({"inspect", d / "junk"});
  EXPECT_EQ(r.code, 65);
  EXPECT_NE(r.err.find("header.magic"), std::string::npos) << r.err;
}

TEST(Bundle, CreateRefusesDuplicateNamesAndBadShardsAndWritesNothing) {
  TempDir d;
  fs::create_directories(d / "x");
  fs::create_directories(d / "y");
  write_file(d / "x/s.mdb", small_shard(7));
  write_file(d / "y/s.mdb", small_shard(8));
  auto r = run_cli({"bundle", "create", d / "out.caf", d / "x/s.mdb", d / "y/s.mdb"});
  EXPECT_EQ(r.code, 64);
  EXPECT_NE(r.err.find("both be member s.mdb"), std::string::npos) << r.err;

  write_file(d / "junk.mdb", "definitely not a shard .........................................");
  r = run_cli({"bundle", "create", d / "out.caf", d / "x/s.mdb", d / "junk.mdb"});
  EXPECT_EQ(r.code, 65);
  EXPECT_NE(r.err.find("junk.mdb: not a valid shard: header.magic"), std::string::npos) << r.err;

  r = run_cli({"bundle", "create", d / "out.caf", d / "missing.mdb"});
  EXPECT_EQ(r.code, 65);
  EXPECT_EQ(files_in(d.path()), 3u) << "x, y, junk.mdb: no bundle and no temporary file";
  EXPECT_EQ(run_cli({"bundle", "create", d / "out.caf"}).code, 64) << "needs a shard";
  EXPECT_EQ(run_cli({"bundle"}).code, 64) << "needs a verb";
}

}  // namespace
}  // namespace dedupctl
