// The real server shard: every field and hash as the published JSON lists it.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "shard/keys.hpp"
#include "shard/mapped_file.hpp"
#include "shard/reader.hpp"
#include "shard/verify.hpp"
#include "test_support.hpp"

namespace dedupd::shard {
namespace {

const char* kFixture = "gpt2-64-8bits.tflite.shard";

class Fixture : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = MappedFile::open(testing::fixture_path(kFixture));
    ASSERT_TRUE(m.ok()) << m.error().to_string();
    file_ = std::move(m).value();
    auto v = ShardView::parse(file_.bytes());
    ASSERT_TRUE(v.ok()) << v.error().to_string();
    view_.emplace(std::move(v).value());
    std::ifstream in(testing::fixture_path(std::string(kFixture) + ".json"));
    json_ = nlohmann::json::parse(in);
  }
  MappedFile file_;
  std::optional<ShardView> view_;
  nlohmann::json json_;
};

TEST_F(Fixture, HeaderFooterAndCounts) {
  const ShardView& v = *view_;
  EXPECT_EQ(v.bytes().size(), 102104u);
  EXPECT_EQ(v.header().version, 2u);
  EXPECT_EQ(v.header().footer_size, 200u);
  ASSERT_TRUE(v.has_footer());
  EXPECT_EQ(v.stats().files, 0u);
  EXPECT_EQ(v.stats().xorbs, 3u);
  EXPECT_EQ(v.stats().chunks, 2117u);
  EXPECT_TRUE(v.keyed());
  EXPECT_EQ(v.chunk_key().to_string(), "d6834b04843aaf16f29903e2428a99be635099f9ea5056cc4e95e7ec8a41509f");
  EXPECT_EQ(v.creation_timestamp(), 1754059905u);
  EXPECT_EQ(v.expiry(), std::optional<std::uint64_t>(1754664705u));
  EXPECT_TRUE(v.footer()->expired_at(1754664705u));
  EXPECT_FALSE(v.footer()->expired_at(1754664704u));
  // Server style: empty tables whose offsets all equal footer_offset.
  const ShardFooter& f = *v.footer();
  EXPECT_EQ(f.footer_offset, 101904u);
  EXPECT_EQ(f.file_lookup_offset, f.footer_offset);
  EXPECT_EQ(f.chunk_lookup_num_entry, 0u);
}

TEST_F(Fixture, KeyEqualsJson) { EXPECT_EQ(view_->chunk_key().to_string(), json_.at("hmac_key").get<std::string>()); }

TEST_F(Fixture, EveryXorbAndStoredChunkHashEqualsJson) {
  const auto& xorbs = json_.at("xorbs");
  ASSERT_EQ(xorbs.size(), view_->stats().xorbs);
  std::size_t i = 0, chunks = 0;
  for (XorbBlock x : view_->xorbs()) {
    const auto& jx = xorbs.at(i++);
    EXPECT_EQ(x.hash().to_string(), jx.at("hash").get<std::string>());
    const auto& jc = jx.at("chunk_hashes");
    ASSERT_EQ(jc.size(), x.num_chunks());
    for (std::uint32_t c = 0; c < x.num_chunks(); ++c, ++chunks)
      ASSERT_EQ(x.chunk(c).chunk_hash.to_string(), jc.at(c).get<std::string>()) << "xorb " << i - 1 << " chunk " << c;
  }
  EXPECT_EQ(chunks, 2117u);
}

TEST_F(Fixture, KeyedKnownAnswerIsXorbOneChunkZero) {
  auto raw = Hash::parse("9502eec19d4b0c9f7b389228fa801f68ecdf15d69ccd1da2f9ddbd0219898335");
  ASSERT_TRUE(raw.ok());
  XorbBlock second = *std::next(view_->xorbs().begin());
  EXPECT_EQ(keyed_chunk_hash(view_->chunk_key(), *raw), second.chunk(0).chunk_hash);
}

TEST_F(Fixture, ChunkByteRangesAreCumulativeUnpackedOffsets) {
  for (XorbBlock x : view_->xorbs()) {
    std::uint64_t at = 0;
    for (std::uint32_t c = 0; c < x.num_chunks(); ++c) {
      ChunkEntry e = x.chunk(c);
      ASSERT_EQ(e.byte_start, at);
      at += e.unpacked_bytes;
    }
    EXPECT_EQ(at, x.header().bytes_in_xorb);
    EXPECT_EQ(x.header().bytes_on_disk, 0u);  // servers leave it 0
  }
}

TEST_F(Fixture, VerifiesCleanAndItsContentHashNamesIt) {
  EXPECT_TRUE(verify_shard(file_.bytes(), testing::fixture_path(kFixture)).empty());
  std::string good = "/cache/shard-cache/" + shard_file_hash(file_.bytes()).to_string() + ".mdb";
  EXPECT_TRUE(verify_shard(file_.bytes(), good).empty());
}

TEST(MappedFileOpen, MissingFileIsAnError) {
  auto m = MappedFile::open("/nonexistent/dedupd/shard.mdb");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().rule, "file.open");
}

}  // namespace
}  // namespace dedupd::shard
