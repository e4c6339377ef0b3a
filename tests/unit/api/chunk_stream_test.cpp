// The answer to POST /v1/chunk as the client reads it (daemon/api/render/
// chunk_stream), over the answer layer and a real index with a fleet that
// answers what it is told: the document or NDJSON, the same bytes however
// small the reads, each result in request order with its fleet mark, the
// counts at the end, and a failing block ending the answer with its error.
#include "daemon/api/render/chunk_stream.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/api/http/metrics.hpp"
#include "tests/unit/answers/answers_test_support.hpp"

namespace dedupd::daemon::api::render {
namespace {

namespace st = shard::testing;
using answers::ChunkBlocks;

class ChunkStreamTest : public answers::testing::AnswersTest {
 protected:
  void SetUp() override {
    AnswersTest::SetUp();
    here = st::make_xorb(81, 4);
    ingest({here});
    fleet_only = st::seeded_hash(8100);
    sources_.fake_fleet.known_chunks = {fleet_only};
    blocks = {{here.raw[0], fleet_only}, {st::seeded_hash(8101)}, {here.raw[1]}};
  }

  std::unique_ptr<ChunkBlocks> batch(answers::Lookups::Scope scope = answers::Lookups::Scope::with_fleet) {
    auto all = blocks;
    return std::make_unique<ChunkBlocks>(
        lookups(scope), [all, i = std::size_t(0)]() mutable -> base::Result<std::span<const shard::Hash>> {
          if (i < all.size()) return std::span<const shard::Hash>(all[i++]);
          return std::span<const shard::Hash>();
        });
  }

  // Everything the stream gives, read `piece` bytes at a time.
  std::string read_all(ChunkStream& s, std::size_t piece) {
    std::string out;
    std::vector<char> buf(piece);
    for (;;) {
      auto n = s.read(buf.data(), buf.size());
      EXPECT_TRUE(n) << (n ? "" : n.error().to_string());
      if (!n || *n == 0) break;
      out.append(buf.data(), *n);
    }
    return out;
  }

  st::TestXorb here;
  shard::Hash fleet_only;
  std::vector<std::vector<shard::Hash>> blocks;
  http::Metrics metrics{{"chunk"}};
};

TEST_F(ChunkStreamTest, TheDocumentHasEveryResultInOrderAndTheCounts) {
  ChunkStream s(batch(), LookupFields{}, ChunkStream::Shape::document, metrics);
  const std::string body = read_all(s, 1 << 16);
  ASSERT_FALSE(body.empty());
  EXPECT_EQ(body.back(), '\n');
  const nlohmann::json doc = nlohmann::json::parse(body);
  ASSERT_EQ(doc["results"].size(), 4u);
  EXPECT_EQ(doc["results"][0]["hash"], here.raw[0].to_string());
  EXPECT_EQ(doc["results"][0]["found"], true);
  EXPECT_EQ(doc["results"][0]["locations"][0]["origin"], "local");
  EXPECT_EQ(doc["results"][1]["hash"], fleet_only.to_string());
  EXPECT_EQ(doc["results"][1]["locations"][0]["origin"], "fleet");
  EXPECT_EQ(doc["results"][2]["found"], false);
  EXPECT_EQ(doc["results"][3]["hash"], here.raw[1].to_string());
  EXPECT_EQ(doc["found"], 3);
  EXPECT_EQ(doc["missing"], 1);
  EXPECT_EQ(doc["fleet"], "ok");
  // What was looked up is counted for /metrics.
  std::string page;
  metrics.render(page);
  EXPECT_NE(page.find("\ndedupd_chunk_lookups_total 4\n"), std::string::npos);
  EXPECT_NE(page.find("\ndedupd_chunk_lookups_found_total 3\n"), std::string::npos);
}

TEST_F(ChunkStreamTest, ReadsOfAnySizeGiveTheSameBytes) {
  ChunkStream whole(batch(), LookupFields{}, ChunkStream::Shape::document, metrics);
  const std::string expected = read_all(whole, 1 << 16);
  for (std::size_t piece : {std::size_t(1), std::size_t(7), std::size_t(100)}) {
    ChunkStream s(batch(), LookupFields{}, ChunkStream::Shape::document, metrics);
    EXPECT_EQ(read_all(s, piece), expected) << piece;
  }
}

TEST_F(ChunkStreamTest, LinesCarryOneResultEachWithItsOwnFleetMark) {
  LookupFields presence;
  presence.location = 0;
  ChunkStream s(batch(), presence, ChunkStream::Shape::lines, metrics);
  std::istringstream lines(read_all(s, 64));
  std::vector<nlohmann::json> got;
  for (std::string line; std::getline(lines, line);) got.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0], nlohmann::json({{"hash", here.raw[0].to_string()}, {"found", true}, {"fleet", "ok"}}));
  EXPECT_EQ(got[2]["found"], false);
  for (const auto& line : got) EXPECT_FALSE(line.contains("locations"));

  // Local only: no fleet mark at all.
  ChunkStream local(batch(answers::Lookups::Scope::local_only), presence, ChunkStream::Shape::lines, metrics);
  const std::string body = read_all(local, 1 << 16);
  EXPECT_EQ(body.find("fleet"), std::string::npos) << body;
  EXPECT_EQ(std::count(body.begin(), body.end(), '\n'), 4);
}

TEST_F(ChunkStreamTest, AFailingBlockEndsTheAnswerWithItsError) {
  auto all = blocks;
  auto failing =
      std::make_unique<ChunkBlocks>(lookups(), [all, i = 0]() mutable -> base::Result<std::span<const shard::Hash>> {
        if (i++ == 0) return std::span<const shard::Hash>(all[0]);
        return base::Error{"spool.read", 0, "the spool file went away", false};
      });
  ChunkStream s(std::move(failing), LookupFields{}, ChunkStream::Shape::document, metrics);
  std::vector<char> buf(1 << 16);
  base::Result<std::size_t> n = std::size_t(0);
  while ((n = s.read(buf.data(), buf.size())) && *n > 0) {
  }
  ASSERT_FALSE(n);
  EXPECT_EQ(n.error().rule, "spool.read");
}

}  // namespace
}  // namespace dedupd::daemon::api::render
