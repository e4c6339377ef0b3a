// dedupctl hash and scan in-process, against a fake daemon: the requests
// scan makes (bounded batches, then the file), what it does with answers
// that make no sense, and the progress bar (a terminal only).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "chunk/chunk_hasher.hpp"
#include "fake_daemon.hpp"
#include "support.hpp"

namespace dedupctl {
namespace {

using namespace testing::verb_test;
// Unordered, not dedupctl::json; under a name of its own, or a batch of
// several test files sees two json in dedupctl.
using Json = nlohmann::json;

// Bytes that cut into several chunks (xorshift32 from a seed).
std::string random_bytes(std::size_t n, std::uint32_t seed) {
  std::string s(n, '\0');
  for (auto& c : s) {
    seed ^= seed << 13;
    seed ^= seed >> 17;
    seed ^= seed << 5;
    c = char(seed);
  }
  return s;
}

std::vector<std::string> chunk_hashes(const std::string& bytes) {
  dedupd::chunk::ChunkHasher h;
  std::vector<dedupd::chunk::ChunkRecord> out;
  h.update(std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()), out);
  (void)h.finish(out);
  std::vector<std::string> v;
  for (const auto& r : out) v.push_back(r.hash.to_string());
  return v;
}

// Answers healthz, and each batch with "found" for the hashes in `known`.
FakeDaemon index_of(std::set<std::string> known) {
  return FakeDaemon([known = std::move(known)](const Request& r) -> Reply {
    if (r.method == "GET" && r.target == "/healthz") return http(200, R"({"status":"ok"})");
    if (r.method == "POST" && r.target == "/v1/chunk") {
      Json results = Json::array();
      const Json asked = Json::parse(r.body);
      for (const auto& h : asked["hashes"]) {
        const bool found = known.contains(h.get<std::string>());
        Json locs = Json::array();
        if (found)
          locs.push_back({{"xorb", std::string(64, 'a')},
                          {"chunk_index", 0},
                          {"byte_start", 0},
                          {"byte_end", 1},
                          {"unpacked_bytes", 1},
                          {"shards", {{{"shard", std::string(64, 'b')}, {"expiry", nullptr}, {"keyed", false}}}}});
        results.push_back({{"hash", h}, {"found", found}, {"locations", locs}});
      }
      return http(200, Json{{"results", results}}.dump());
    }
    return http_error(404, "not_found", "no route " + r.target);
  });
}

TEST(Scan, AsksInBatchesOfAtMostTheBatchSize) {
  TempDir dir;
  const std::string bytes = random_bytes(1 << 20, 3);
  testing::write_file(dir / "f", bytes);
  const auto hashes = chunk_hashes(bytes);
  ASSERT_GT(hashes.size(), 8u);
  std::set<std::string> known(hashes.begin(), hashes.begin() + 5);
  auto d = index_of(known);
  auto r = run_cli({"--socket", d.socket(), "--json", "scan", "--batch", "3", dir / "f"});
  ASSERT_EQ(r.code, 1) << r.err;
  const auto doc = Json::parse(r.out);
  EXPECT_EQ(doc["files"][0]["known_chunks"], 5);
  EXPECT_EQ(doc["files"][0]["new_chunks"], hashes.size() - 5);
  EXPECT_EQ(doc["files"][0]["xorbs"][0]["chunks"], 5);
  EXPECT_EQ(doc["files"][0]["shards"], Json::array({std::string(64, 'b')}));

  std::vector<std::string> asked;
  std::size_t posts = 0;
  for (const auto& q : d.requests()) {
    if (q.method != "POST") continue;
    ++posts;
    const auto batch = Json::parse(q.body)["hashes"];
    EXPECT_LE(batch.size(), 3u);
    for (const auto& h : batch) asked.push_back(h);
  }
  EXPECT_EQ(asked, hashes);  // every chunk once, in file order
  EXPECT_EQ(posts, (hashes.size() + 2) / 3);
  EXPECT_EQ(d.requests().front().target, "/healthz");
  EXPECT_EQ(d.requests().back().target, "/v1/file/" + Json::parse(r.out)["files"][0]["file_hash"].get<std::string>());
}

TEST(Scan, WrongResultCountIsAProtocolError) {
  TempDir dir;
  testing::write_file(dir / "f", random_bytes(300000, 5));
  FakeDaemon d([](const Request& r) -> Reply {
    if (r.target == "/healthz") return http(200, R"({"status":"ok"})");
    return http(200, R"({"results":[]})");
  });
  auto r = run_cli({"--socket", d.socket(), "scan", dir / "f"});
  EXPECT_EQ(r.code, 76);
  EXPECT_NE(r.err.find("results for"), std::string::npos) << r.err;
}

TEST(Scan, DaemonNotReadyIsUnavailableBeforeReading) {
  TempDir dir;
  FakeDaemon d([](const Request&) { return http_error(503, "not_ready", "opening the index"); });
  auto r = run_cli({"--socket", d.socket(), "scan", dir / "missing"});
  EXPECT_EQ(r.code, 69);  // not 65: the file was never opened
}

TEST(Hash, ProgressOnlyOnATerminalForLargeRuns) {
  TempDir dir;
  testing::RunOptions on_tty;
  on_tty.tty = true;
  testing::write_file(dir / "big", std::string(64 << 20, 'x'));
  testing::write_file(dir / "small", "abc");
  auto tty = run_cli({"hash", dir / "big", dir / "small"}, on_tty);
  ASSERT_EQ(tty.code, 0) << tty.err;
  // Bytes of the whole run, which file of how many, and its name.
  EXPECT_NE(tty.err.find("[1/2] "), std::string::npos) << tty.err;
  EXPECT_NE(tty.err.find(" of 64.0 MiB (100.0%)"), std::string::npos) << tty.err;
  EXPECT_NE(tty.err.find(dir / "big"), std::string::npos) << tty.err;
  auto small = run_cli({"hash", dir / "small"}, on_tty);
  EXPECT_EQ(small.err, "") << "no progress for a small run";
  auto piped = run_cli({"hash", dir / "big"});
  EXPECT_EQ(piped.code, 0);
  EXPECT_EQ(piped.err, "");
  auto json_tty = run_cli({"--json", "hash", dir / "big"}, on_tty);
  EXPECT_EQ(json_tty.err, "");
  // The same answer either way.
  EXPECT_NE(piped.out.find(Json::parse(json_tty.out)["files"][0]["file_hash"].get<std::string>()), std::string::npos);
}

}  // namespace
}  // namespace dedupctl
