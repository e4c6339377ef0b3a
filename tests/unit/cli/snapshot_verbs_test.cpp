// lookup-snapshot on read shards written with swh::Writer (the same writer
// dedupd exports with), and export against the fake daemon: the file is
// written atomically and only when the answer is a valid read shard.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "fake_daemon.hpp"
#include "shard/hash.hpp"
#include "support.hpp"
#include "swh/location.hpp"
#include "swh/read_shard.hpp"
#include "swh/write_shard.hpp"

namespace dedupctl {
namespace {

using testing::read_file;
using testing::run_cli;
using testing::TempDir;
using testing::write_file;
namespace fs = std::filesystem;
namespace swh = dedupd::swh;
using dedupd::shard::Hash;

Hash h(std::uint8_t b) {
  Hash x;
  x.bytes.fill(b);
  x.bytes[31] = std::uint8_t(b ^ 0x5A);
  return x;
}

// Chunk h(1) in one xorb, h(2) in two; h(3) absent.
std::string make_snapshot(const std::string& path) {
  auto w = swh::Writer::create(path);
  EXPECT_TRUE(w);
  std::vector<swh::Location> one = {{h(0x10), 4, 1000, 3000, 2000}};
  std::vector<swh::Location> two = {{h(0x10), 5, 3000, 3100, 100}, {h(0x20), 0, 0, 100, 100}};
  EXPECT_TRUE(w->add(h(1).bytes, swh::encode_locations(one)));
  EXPECT_TRUE(w->add(h(2).bytes, swh::encode_locations(two)));
  EXPECT_TRUE(w->finish());
  return path;
}

TEST(LookupSnapshot, OneHashJsonHasTheQueryShape) {
  TempDir d;
  auto file = make_snapshot(d / "snap.swh");
  auto r = run_cli({"lookup-snapshot", "--json", file, h(1).to_string()});
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc, (nlohmann::json{{"hash", h(1).to_string()},
                                 {"found", true},
                                 {"locations",
                                  {{{"xorb", h(0x10).to_string()},
                                    {"chunk_index", 4},
                                    {"byte_start", 1000},
                                    {"byte_end", 3000},
                                    {"unpacked_bytes", 2000}}}}}));
  r = run_cli({"lookup-snapshot", file, h(2).to_string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("found, 2 locations"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("#5, bytes 3000..3100 of the xorb, 100 B unpacked"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(h(0x20).to_string()), std::string::npos);
}

TEST(LookupSnapshot, AnAbsentHashIsExitOne) {
  TempDir d;
  auto file = make_snapshot(d / "snap.swh");
  auto r = run_cli({"lookup-snapshot", file, h(3).to_string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("not found"), std::string::npos);

  r = run_cli({"lookup-snapshot", "--json", file, h(1).to_string(), h(3).to_string(), h(2).to_string()});
  EXPECT_EQ(r.code, 1);
  nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["found"], 2);
  EXPECT_EQ(doc["missing"], 1);
  ASSERT_EQ(doc["results"].size(), 3u);
  EXPECT_EQ(doc["results"][1],
            (nlohmann::json{{"hash", h(3).to_string()}, {"found", false}, {"locations", nlohmann::json::array()}}));
  EXPECT_EQ(doc["results"][2]["locations"].size(), 2u);

  r = run_cli({"lookup-snapshot", file, h(1).to_string(), h(2).to_string()});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("2 found, 0 missing"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(" \n"), std::string::npos) << "no trailing blanks";

  testing::RunOptions o;
  o.stdin_text = h(1).to_string() + "\n# comment\n" + h(2).to_string() + "\n";
  r = run_cli({"-q", "lookup-snapshot", file, "-"}, o);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(LookupSnapshot, MalformedHashOrFileIs65) {
  TempDir d;
  auto file = make_snapshot(d / "snap.swh");
  auto r = run_cli({"lookup-snapshot", file, "xyz"});
  EXPECT_EQ(r.code, 65);
  EXPECT_NE(r.err.find("chunk hash"), std::string::npos) << r.err;

  write_file(d / "junk.swh", std::string(600, 'j'));
  r = run_cli({"lookup-snapshot", d / "junk.swh", h(1).to_string()});
  EXPECT_EQ(r.code, 65);
  EXPECT_NE(r.err.find("swh.magic at offset 0"), std::string::npos) << r.err;

  r = run_cli({"lookup-snapshot", d / "missing.swh", h(1).to_string()});
  EXPECT_EQ(r.code, 65);

  std::string cut = read_file(file);
  write_file(d / "cut.swh", cut.substr(0, cut.size() - 10));
  r = run_cli({"lookup-snapshot", d / "cut.swh", h(1).to_string()});
  EXPECT_EQ(r.code, 65) << r.out;
}

TEST(Export, WritesTheAnswerAtomicallyAndCountsKeys) {
  TempDir d;
  const std::string body = read_file(make_snapshot(d / "made.swh"));
  testing::FakeDaemon fake(
      [&](const testing::Request&) { return testing::http(200, body, "application/octet-stream"); });
  auto r = run_cli({"--socket", fake.socket(), "export", "--format", "swh-shard", d / "out.swh"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("wrote " + (d / "out.swh") + ": 2 keys (raw chunk hashes), "), 0u) << r.out;
  EXPECT_NE(r.out.find(" bytes ("), std::string::npos) << r.out;
  EXPECT_EQ(read_file(d / "out.swh"), body);
  auto reqs = fake.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "POST");
  EXPECT_EQ(reqs[0].target, "/v1/admin/export?format=swh-shard");

  r = run_cli({"--socket", fake.socket(), "--json", "export", "--format", "swh-shard", d / "out2.swh"});
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["keys"], 2);
  EXPECT_EQ(doc["bytes"], body.size());
  EXPECT_EQ(doc["format"], "swh-shard");
  EXPECT_EQ(run_cli({"lookup-snapshot", d / "out2.swh", h(2).to_string()}).code, 0);
}

TEST(Export, RefusalsAndGarbageLeaveNoFile) {
  TempDir d;
  int n = 0;
  testing::FakeDaemon fake([&](const testing::Request&) {
    switch (n++) {
      case 0:
        return testing::http_error(403, "forbidden", "/v1/admin/export needs root or the admin group (uid 1000)");
      case 1:
        return testing::http_error(404, "not_found", "nothing to export");
      default:
        return testing::http(200, std::string(700, 'x'), "application/octet-stream");
    }
  });
  auto export_to = [&](const std::string& name) {
    return run_cli({"--socket", fake.socket(), "export", "--format", "swh-shard", d / name});
  };
  auto r = export_to("a.swh");
  EXPECT_EQ(r.code, 77);
  EXPECT_NE(r.err.find("admin group"), std::string::npos) << r.err;
  r = export_to("b.swh");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("export: nothing to export"), std::string::npos) << r.err;
  r = export_to("c.swh");
  EXPECT_EQ(r.code, 76);
  EXPECT_NE(r.err.find("not a valid read shard"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_empty(d.path())) << "no output and no temporary file";

  EXPECT_EQ(run_cli({"export", "--format", "tar", d / "x"}).code, 64);
  EXPECT_EQ(run_cli({"export", d / "x"}).code, 64) << "--format is required";
}

}  // namespace
}  // namespace dedupctl
