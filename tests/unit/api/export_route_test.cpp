// POST /v1/admin/export?format=swh-shard over the socket: the body is a
// Software Heritage read shard of the raw chunks, the temporary file is
// gone afterwards, and the edges answer as docs/API.md says. (Who may call
// it: the shared admin check, peercred_test.cpp.)
#include <filesystem>
#include <fstream>

#include "api/routes.hpp"
#include "api_test_support.hpp"
#include "swh/location.hpp"
#include "swh/read_shard.hpp"

namespace dedupd::daemon::testing {
namespace {

namespace st = shard::testing;
using ::testing::HasSubstr;

class ExportRouteTest : public ApiTest {};

std::string export_path() { return std::string(dedupd::api::kExport) + "?format=swh-shard"; }

TEST_F(ExportRouteTest, StreamsAReadShardOfTheRawChunksAndLeavesNoFile) {
  auto small = st::small_shard();
  ingest(small.writer.write({}));
  auto r = client_->post(export_path());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type, "application/octet-stream");
  std::size_t chunks = 0;
  for (const auto& x : small.xorbs) chunks += x.raw.size();
  EXPECT_THAT(r.headers, HasSubstr("X-Dedupd-Keys: " + std::to_string(chunks)));

  auto bytes = std::vector<std::uint8_t>(r.body.begin(), r.body.end());
  auto reader = swh::Reader::from_bytes(bytes);
  ASSERT_TRUE(reader) << reader.error().to_string();
  EXPECT_EQ(reader->header().objects_count, chunks);
  const auto& x = small.xorbs.at(0);
  auto got = reader->lookup(x.raw.at(1).bytes);
  ASSERT_TRUE(got && got->has_value());
  auto locs = swh::decode_locations(**got);
  ASSERT_TRUE(locs);
  ASSERT_EQ(locs->size(), 1u);
  EXPECT_EQ((*locs)[0].xorb, x.record.header.xorb_hash);
  EXPECT_EQ((*locs)[0].chunk_index, 1u);
  EXPECT_EQ((*locs)[0].byte_start, x.record.chunks.at(1).byte_start);

  // Written in <state_dir>/export, unlinked before it was sent.
  const auto dir = std::filesystem::path(dir_.path()) / "export";
  ASSERT_TRUE(std::filesystem::is_directory(dir));
  EXPECT_TRUE(std::filesystem::is_empty(dir));
}

TEST_F(ExportRouteTest, StaleLeftoversAreSweptAndKeyedOnlyIndexesHaveNothingToExport) {
  const auto dir = std::filesystem::path(dir_.path()) / "export";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "snapshot-1-1.swh.tmp.abcdef") << "left by a killed export";
  auto keyed = st::make_xorb(5, 4, st::seeded_hash(9));
  shard::ShardWriter w;
  w.add_xorb(keyed.record);
  shard::WriteOptions o;
  o.footer.chunk_hash_key = st::seeded_hash(9);
  o.footer.creation_timestamp = kNow;
  o.footer.key_expiry = kNow + 3600;
  ingest(w.write(o));
  auto r = client_->post(export_path());
  EXPECT_EQ(r.status, 404) << r.body;
  EXPECT_EQ(r.json()["error"]["code"], "not_found");
  EXPECT_TRUE(std::filesystem::is_empty(dir));
}

TEST_F(ExportRouteTest, TheFormatIsRequiredAndChecked) {
  auto r = client_->post(std::string(dedupd::api::kExport));
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_THAT(r.body, HasSubstr("swh-shard"));
  r = client_->post(std::string(dedupd::api::kExport) + "?format=tar");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(client_->get(std::string(dedupd::api::kExport)).status, 405);
}

}  // namespace
}  // namespace dedupd::daemon::testing
