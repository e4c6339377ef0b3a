// Shards the real Xet client (hf_xet, the version in fixtures/hf_xet/
// sources.json) wrote, made by tests/xet_client/make_fixtures.py: each shape
// it writes is read, verified and described as the client meant it.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "shard/format.hpp"
#include "shard/mapped_file.hpp"
#include "shard/reader.hpp"
#include "shard/verify.hpp"
#include "test_support.hpp"

namespace dedupd::shard {
namespace {

constexpr std::uint64_t kThreeWeeks = 21ull * 24 * 3600;  // xet-core's export expiry

struct ClientShard {
  std::string name, role;
  MappedFile file;
  std::optional<ShardView> view;
};

std::vector<ClientShard> load_client_shards() {
  std::ifstream in(testing::fixture_path("hf_xet/sources.json"));
  const auto sources = nlohmann::json::parse(in);
  std::vector<ClientShard> out;
  for (const auto& [name, role] : sources.at("files").items()) {
    ClientShard s{name, role.get<std::string>(), {}, {}};
    auto m = MappedFile::open(testing::fixture_path("hf_xet/" + name));
    EXPECT_TRUE(m.ok()) << name;
    if (!m.ok()) continue;
    s.file = std::move(m).value();
    auto v = ShardView::parse(s.file.bytes());
    EXPECT_TRUE(v.ok()) << name << ": " << v.error().to_string();
    if (v.ok()) s.view.emplace(std::move(v).value());
    out.push_back(std::move(s));
  }
  return out;
}

TEST(HfXetFixtures, EveryShardTheClientWroteParsesAndVerifies) {
  auto shards = load_client_shards();
  ASSERT_EQ(shards.size(), 5u);
  for (const auto& s : shards) {
    ASSERT_TRUE(s.view) << s.name;
    // The name check applies to the cache files (<hash>.mdb).
    auto problems = verify_shard(s.file.bytes(), s.name);
    EXPECT_TRUE(problems.empty()) << s.name << ": " << problems.front().to_string();
  }
}

TEST(HfXetFixtures, ExportedSessionShardsCarryLookupTablesAndExpireInThreeWeeks) {
  int seen = 0;
  for (const auto& s : load_client_shards()) {
    if (s.role.find("exported session shard") == std::string::npos) continue;
    ++seen;
    const ShardView& v = *s.view;
    ASSERT_TRUE(v.has_footer()) << s.name;
    EXPECT_FALSE(v.keyed());
    EXPECT_EQ(v.expiry(), std::optional<std::uint64_t>(v.creation_timestamp() + kThreeWeeks)) << s.name;
    EXPECT_EQ(v.file_lookup_size(), v.stats().files) << s.name;
    EXPECT_EQ(v.xorb_lookup_size(), v.stats().xorbs) << s.name;
    EXPECT_EQ(v.chunk_lookup_size(), v.stats().chunks) << s.name;
  }
  EXPECT_EQ(seen, 2);
}

TEST(HfXetFixtures, AnEmptyFileKeepsVerificationAndMetadataFlagsWithNoTerms) {
  // hf_xet 1.8.0 writes a 0-byte file as hash 0 with both flags, no terms
  // and no verification entries, beside files that have them; its sha256
  // is stored as zero, not as the digest of no bytes.
  int seen = 0;
  for (const auto& s : load_client_shards()) {
    for (FileBlock fb : s.view->files()) {
      if (fb.num_terms() != 0) {
        EXPECT_TRUE(fb.has_verification()) << s.name;
        continue;
      }
      ++seen;
      EXPECT_EQ(fb.hash(), Hash{}) << s.name;
      EXPECT_EQ(fb.header().flags, kFileFlagWithVerification | kFileFlagWithMetadataExt) << s.name;
      ASSERT_TRUE(fb.sha256()) << s.name;
      EXPECT_EQ(*fb.sha256(), Hash{}) << s.name;
    }
  }
  EXPECT_EQ(seen, 2);  // in the session shard and in its upload body
}

TEST(HfXetFixtures, UploadBodiesHaveNoFooterAndTheSavedReplyIsKeyed) {
  int bodies = 0, replies = 0;
  for (const auto& s : load_client_shards()) {
    const ShardView& v = *s.view;
    if (s.role.find("POST") != std::string::npos) {
      ++bodies;
      EXPECT_FALSE(v.has_footer()) << s.name;
      EXPECT_EQ(v.header().footer_size, 0u) << s.name;
    } else if (s.role.find("global-dedup reply") != std::string::npos) {
      ++replies;
      EXPECT_TRUE(v.keyed()) << s.name;
      EXPECT_EQ(v.stats().files, 0u) << s.name;
      EXPECT_GE(v.stats().xorbs, 1u) << s.name;
    }
  }
  EXPECT_EQ(bodies, 2);
  EXPECT_EQ(replies, 1);
}

}  // namespace
}  // namespace dedupd::shard
