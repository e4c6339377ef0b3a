// The Index as a whole: a new one, reopened, opened twice, its files and
// sha256s, its stats and counters; and the four layouts every IndexTest of
// the other files runs under (layouts.hpp).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "index/index.hpp"
#include "index/records.hpp"
#include "index/tables.hpp"
#include "shard/mapped_file.hpp"
#include "tests/unit/index/layouts.hpp"
#include "tests/unit/index/support.hpp"

namespace dedupd::index::gen {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

INSTANTIATE_TEST_SUITE_P(Tables, IndexTest,
                         ::testing::Values(Layout{false, false}, Layout{true, false}, Layout{false, true},
                                           Layout{true, true}),
                         [](const auto& test) {
                           return std::string(test.param.merged ? "merged" : "recent") +
                                  (test.param.filtered ? "_filtered" : "");
                         });

TEST_P(IndexTest, NewIndexIsEmptyAndConsistent) {
  Stats s = stats();
  EXPECT_EQ(s.shards_live, 0u);
  EXPECT_EQ(s.chunk_entries, 0u);
  EXPECT_EQ(s.xorbs, 0u);
  EXPECT_GT(s.map_size, 0u);
  EXPECT_GT(s.db_bytes, 0u);
  EXPECT_FALSE(s.next_expiry);
  EXPECT_THAT(problems(), IsEmpty());
  EXPECT_THAT(find(hash_of_seed(1)), IsEmpty());
}

TEST_P(IndexTest, FilesAndSha256) {
  auto x = gen_xorb(60, 10);
  auto f_plain = gen_file(5, x, 0, 10, false, false);
  auto f_rich = gen_file(5, x, 0, 10, true, true);
  auto other = gen_file(6, x, 2, 4, true, true);
  other.metadata_ext->hash = f_rich.metadata_ext->hash;  // same content sha, other file hash
  auto s1 = own(build_shard({.xorbs = {&x}, .files = {f_plain}}));
  auto s2 = own(build_shard({.xorbs = {&x}, .created = 5, .files = {f_rich, other}}));
  ingest(s1);
  auto f = idx->file(f_plain.header.file_hash);
  ASSERT_TRUE(f && f->has_value());
  EXPECT_FALSE((*f)->sha256);
  EXPECT_THAT((*f)->verification, IsEmpty());
  ASSERT_EQ((*f)->terms.size(), 1u);
  EXPECT_EQ((*f)->terms[0].xorb_hash, x.hash);
  EXPECT_EQ((*f)->terms[0].chunk_end, 10u);
  EXPECT_EQ((*f)->size, x.byte_start(10));

  IngestResult r2 = ingest(s2);
  EXPECT_EQ(r2.new_files, 1u);
  f = idx->file(f_plain.header.file_hash);
  EXPECT_EQ((*f)->sha256, f_rich.metadata_ext->hash) << "the richer description wins";
  ASSERT_EQ((*f)->verification.size(), 1u);
  EXPECT_EQ((*f)->verification[0], f_rich.verification[0].hash);
  EXPECT_THAT((*f)->shards, UnorderedElementsAre(s1.hash, s2.hash));
  EXPECT_THAT(*idx->files_with_sha256(f_rich.metadata_ext->hash),
              UnorderedElementsAre(f_rich.header.file_hash, other.header.file_hash));
  EXPECT_THAT(problems(), IsEmpty());

  ASSERT_TRUE(idx->remove(s2.hash));
  EXPECT_TRUE(idx->file(f_plain.header.file_hash)->has_value());
  EXPECT_FALSE(idx->file(other.header.file_hash)->has_value());
  EXPECT_THAT(*idx->files_with_sha256(f_rich.metadata_ext->hash), ElementsAre(f_rich.header.file_hash));
  EXPECT_THAT(problems(), IsEmpty());
  ASSERT_TRUE(idx->remove(s1.hash));
  EXPECT_EQ(stats().files, 0u);
  EXPECT_THAT(*idx->files_with_sha256(f_rich.metadata_ext->hash), IsEmpty());
  EXPECT_THAT(problems(), IsEmpty());
}

TEST_P(IndexTest, DataSurvivesReopen) {
  auto x = gen_xorb(90, 40);
  auto s = own(build_shard({.xorbs = {&x}, .expiry = 5000}));
  ingest(s);
  reopen();
  EXPECT_EQ(find(x.raw[39]).size(), 1u);
  EXPECT_EQ(*idx->next_expiry(), 5000u);
  EXPECT_THAT(problems(), IsEmpty());
}

TEST_P(IndexTest, SecondOpenInTheSameProcessIsRefused) {
  Options o;
  o.dir = tmp / "idx";
  auto second = Index::open(o);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().rule, kRuleAlreadyOpen);
  idx.reset();
  EXPECT_TRUE(Index::open(o)) << "closing frees the directory again";
}

TEST_P(IndexTest, StatsReportSpace) {
  auto x = gen_xorb(400, 2000);
  ingest(own(build_shard({.xorbs = {&x}})));
  Stats s = stats();
  EXPECT_EQ(s.chunk_entries, 2000u);
  EXPECT_EQ(s.page_size, 4096u);
  EXPECT_GE(s.map_used, 2000u * 48);
  EXPECT_GE(s.db_bytes, s.map_used - s.page_size * 2);
  EXPECT_LE(s.map_used, s.map_size);
}

// counts() is what READY=1 waits for: the same counters as stats(), none
// of its walks, on an index whose counters differ from one another.
TEST_P(IndexTest, CountsAreStatsCounters) {
  auto a = gen_xorb(410, 300), b = gen_xorb(411, 200), c = gen_xorb(412, 100);
  auto s1 = own(build_shard({.xorbs = {&a, &b}}));
  auto s2 = own(build_shard({.xorbs = {&c}}));
  ingest(s1, "/a.mdb");
  ingest(s2, "/b.mdb");
  ASSERT_TRUE(idx->remove(s2.hash));
  ASSERT_TRUE(idx->record_rejected(RejectInfo{.path = "/bad.mdb", .rule = "x"}));
  ASSERT_TRUE(idx->record_rejected(RejectInfo{.path = "/worse.mdb", .rule = "x"}));
  ASSERT_TRUE(idx->record_rejected(RejectInfo{.path = "/worst.mdb", .rule = "x"}));
  Stats s = stats();
  auto n = idx->counts();
  ASSERT_TRUE(n) << n.error().to_string();
  EXPECT_EQ(n->shards_live, 1u);
  EXPECT_EQ(n->shards_removed, 1u);
  EXPECT_EQ(n->rejected, 3u);
  EXPECT_EQ(n->chunk_entries, 500u);
  EXPECT_EQ(n->xorbs, 2u);
  const Counts& from_stats = s;
  EXPECT_EQ(n->shards_live, from_stats.shards_live);
  EXPECT_EQ(n->shards_expired, from_stats.shards_expired);
  EXPECT_EQ(n->shards_removed, from_stats.shards_removed);
  EXPECT_EQ(n->rejected, from_stats.rejected);
  EXPECT_EQ(n->xorbs, from_stats.xorbs);
  EXPECT_EQ(n->chunk_entries, from_stats.chunk_entries);
  EXPECT_EQ(n->recent_chunk_entries, from_stats.recent_chunk_entries);
  EXPECT_EQ(n->files, from_stats.files);
}

}  // namespace
}  // namespace dedupd::index::gen
