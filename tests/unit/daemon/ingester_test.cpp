// A file from a watched directory, or an uploaded body, into the index
// (daemon/ingest/ingester), over a real index: every outcome a file can
// have, a rejected file recorded with its rule and moved to quarantine, a
// bundle's members each a source of their own, and an upload all or nothing.
// The queue that drives it is in ingest_queue_test.cpp.
#include "daemon/ingest/ingester.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "daemon/core/counters.hpp"
#include "daemon/ingest/cas_scope.hpp"
#include "index/index.hpp"
#include "shard/caf.hpp"
#include "test_support.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/unit/daemon/index_in.hpp"

namespace dedupd::daemon::ingest {
namespace {

namespace fs = std::filesystem;
namespace st = shard::testing;

constexpr std::uint64_t kNow = 1'750'000'000;

std::vector<std::uint8_t> shard_bytes(std::uint64_t seed, std::optional<std::uint64_t> expiry = std::nullopt) {
  shard::ShardWriter w;
  w.add_xorb(st::make_xorb(seed, 6).record);
  shard::WriteOptions wo;
  if (expiry) wo.footer.key_expiry = *expiry;
  return w.write(wo);
}

class IngesterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    idx = daemon::testing::open_index_in(dir / "index");
    ASSERT_TRUE(idx);
    ingester = std::make_unique<Ingester>(*idx, counters, scopes);
  }

  std::string put(const std::string& name, const std::vector<std::uint8_t>& bytes) {
    std::string path = dir / name;
    tests::write_file(path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    return path;
  }

  FileOutcome ingest(const std::string& path, watch::FileKind kind = watch::FileKind::shard) {
    return ingester->ingest_file(watch::Candidate{path, kind}, kNow);
  }

  tests::TempDir dir{"ingester"};
  core::Counters counters;
  CasScopes scopes;
  std::unique_ptr<index::Index> idx;
  std::unique_ptr<Ingester> ingester;
};

TEST_F(IngesterTest, EveryOutcomeOfAShardFile) {
  const auto bytes = shard_bytes(1);
  const std::string a = put("a.mdb", bytes);
  EXPECT_EQ(ingest(a), FileOutcome::added);
  EXPECT_EQ(counters.shards_ingested, 1u);
  EXPECT_EQ(counters.chunks_ingested, 6u);
  EXPECT_EQ(ingest(a), FileOutcome::unchanged) << "seen with this size and mtime";
  EXPECT_EQ(ingest(put("copy.mdb", bytes)), FileOutcome::already_present);
  EXPECT_EQ(counters.shards_duplicate, 1u);
  EXPECT_EQ(ingest(put("old.mdb", shard_bytes(2, kNow - 10))), FileOutcome::expired);
  EXPECT_EQ(ingest(dir / "missing.mdb"), FileOutcome::vanished);
  fs::create_directories(dir / "a-directory.mdb");
  EXPECT_EQ(ingest(dir / "a-directory.mdb"), FileOutcome::vanished) << "not a regular file";

  auto info = idx->shard(shard::shard_file_hash(bytes));
  ASSERT_TRUE(info && *info);
  ASSERT_TRUE(idx->remove((*info)->hash, kNow));
  EXPECT_EQ(ingest(put("again.mdb", bytes)), FileOutcome::previously_gone) << "a removed shard stays out";
  EXPECT_STREQ(to_string(FileOutcome::previously_gone), "previously_gone");
}

TEST_F(IngesterTest, ARejectedFileIsRecordedOnceAndQuarantined) {
  fs::create_directories(dir / "quarantine");
  ingester->set_quarantine_dir(dir / "quarantine");
  const std::string bad = put("bad.mdb", std::vector<std::uint8_t>(200, 0x42));
  EXPECT_EQ(ingest(bad), FileOutcome::rejected);
  EXPECT_EQ(counters.shards_rejected, 1u);
  EXPECT_FALSE(fs::exists(bad)) << "moved to quarantine";
  EXPECT_FALSE(fs::is_empty(dir / "quarantine"));
  auto rejected = idx->rejected();
  ASSERT_TRUE(rejected);
  ASSERT_EQ(rejected->size(), 1u);
  EXPECT_EQ((*rejected)[0].path, bad);
  EXPECT_EQ((*rejected)[0].rule, "header.magic");
  EXPECT_EQ((*rejected)[0].offset, 0u);
  EXPECT_EQ((*rejected)[0].recorded_at, kNow);
  EXPECT_NE((*rejected)[0].message.find("(moved to " + dir / "quarantine"), std::string::npos)
      << (*rejected)[0].message;

  // Without a quarantine the file stays, and is looked at again only once
  // it changes.
  ingester->set_quarantine_dir(std::nullopt);
  const std::string kept = put("kept.mdb", std::vector<std::uint8_t>(10, 0x42));
  EXPECT_EQ(ingest(kept), FileOutcome::rejected);
  EXPECT_TRUE(fs::exists(kept));
  EXPECT_EQ(ingest(kept), FileOutcome::unchanged);
  EXPECT_EQ(counters.shards_rejected, 2u);
}

TEST_F(IngesterTest, ABundlesMembersAreSourcesOfTheirOwn) {
  const auto one = shard_bytes(3), two = shard_bytes(4);
  const std::vector<std::uint8_t> bad(100, 0x42), text = {'h', 'i'};
  std::vector<shard::caf::MemberInput> members = {
      {"one.mdb", one}, {"bad.mdb", bad}, {"two.mdb", two}, {"notes.txt", text}};
  auto bundle = shard::caf::write_bundle(members);
  ASSERT_TRUE(bundle) << bundle.error().to_string();
  const std::string path = put("b.caf", *bundle);
  EXPECT_EQ(ingest(path, watch::FileKind::bundle), FileOutcome::added);
  EXPECT_EQ(counters.shards_ingested, 2u);
  EXPECT_EQ(counters.shards_rejected, 1u) << "the bad member alone";
  EXPECT_TRUE(fs::exists(path)) << "a bundle is never quarantined";
  for (const char* member : {"one.mdb", "two.mdb"}) {
    auto s = idx->source(path + "#" + member);
    ASSERT_TRUE(s);
    ASSERT_TRUE(*s) << member;
    EXPECT_FALSE((*s)->rejected);
  }
  auto rejected = idx->source(path + "#bad.mdb");
  ASSERT_TRUE(rejected && *rejected);
  EXPECT_TRUE((*rejected)->rejected);
  EXPECT_EQ(ingest(path, watch::FileKind::bundle), FileOutcome::unchanged);

  const std::string broken = put("broken.caf", std::vector<std::uint8_t>(16, 0));
  EXPECT_EQ(ingest(broken, watch::FileKind::bundle), FileOutcome::rejected);
}

TEST_F(IngesterTest, AnUploadIsAllOrNothingAndBringsBackARemovedShard) {
  const auto bytes = shard_bytes(5);
  auto first = ingester->ingest_upload(bytes, "up.mdb", kNow);
  ASSERT_TRUE(first) << first.error().to_string();
  ASSERT_EQ(first->size(), 1u);
  EXPECT_TRUE((*first)[0].added);
  EXPECT_EQ((*first)[0].hash, shard::shard_file_hash(bytes));
  EXPECT_EQ((*first)[0].xorbs, 1u);
  EXPECT_EQ((*first)[0].chunks, 6u);
  auto again = ingester->ingest_upload(bytes, "up.mdb", kNow);
  ASSERT_TRUE(again);
  EXPECT_FALSE((*again)[0].added) << "the same content was indexed already";

  ASSERT_TRUE(idx->remove((*first)[0].hash, kNow));
  auto revived = ingester->ingest_upload(bytes, "", kNow);
  ASSERT_TRUE(revived) << revived.error().to_string();
  EXPECT_TRUE((*revived)[0].added) << "an explicit upload brings it back";

  // A bundle with one bad member: nothing of it is indexed, and the error
  // names the member and where it is in the body.
  const auto good = shard_bytes(6);
  const std::vector<std::uint8_t> bad(100, 0x42);
  std::vector<shard::caf::MemberInput> members = {{"good.mdb", good}, {"bad.mdb", bad}};
  auto bundle = shard::caf::write_bundle(members);
  ASSERT_TRUE(bundle);
  auto refused = ingester->ingest_upload(*bundle, "two.caf", kNow);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().rule, "header.magic");
  EXPECT_EQ(refused.error().offset, good.size()) << "the bad member starts after the good one";
  EXPECT_EQ(refused.error().message.rfind("bad.mdb: ", 0), 0u) << refused.error().message;
  auto not_indexed = idx->shard(shard::shard_file_hash(good));
  ASSERT_TRUE(not_indexed);
  EXPECT_FALSE(*not_indexed);
  auto garbage = ingester->ingest_upload(std::vector<std::uint8_t>(4, 0), "x.caf", kNow);
  EXPECT_FALSE(garbage);
}

}  // namespace
}  // namespace dedupd::daemon::ingest
