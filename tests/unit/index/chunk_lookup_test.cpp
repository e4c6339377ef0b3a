// Chunk lookups: single and batched, in the order of the queries, from both
// chunk tables, under the four layouts.
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

using ::testing::IsEmpty;

TEST_P(IndexTest, AHashSharingTheFirst48BitsIsNotAMatch) {
  auto a = gen_xorb(3, 4);
  auto s = own(build_shard({.xorbs = {&a}}));
  ingest(s);
  Hash near = a.raw[2];
  near.bytes[31] ^= 1;  // same candidate prefix, different hash
  EXPECT_THAT(find(near), IsEmpty());
  near = a.raw[2];
  near.bytes[5] ^= 1;  // last byte of the candidate prefix
  EXPECT_THAT(find(near), IsEmpty());
  EXPECT_EQ(find(a.raw[2]).size(), 1u);
}

TEST_P(IndexTest, EntriesAnswerFromBothTables) {
  auto x1 = gen_xorb(36, 50), x2 = gen_xorb(37, 50);
  auto s1 = own(build_shard({.xorbs = {&x1}}));
  auto s2 = own(build_shard({.xorbs = {&x2, &x1}}));
  ingest(s1);
  ASSERT_TRUE(idx->merge_recent());
  EXPECT_EQ(stats().recent_chunk_entries, 0u);
  ingest(s2);
  EXPECT_EQ(stats().chunk_entries, 100u);
  EXPECT_EQ(find(x1.raw[10])[0].shards.size(), 2u);
  EXPECT_EQ(find(x2.raw[10]).size(), 1u);
  EXPECT_THAT(problems(), IsEmpty());
  ASSERT_TRUE(idx->remove(s1.hash));
  ASSERT_TRUE(idx->remove(s2.hash));
  EXPECT_EQ(stats().chunk_entries, 0u);
  EXPECT_THAT(find(x1.raw[10]), IsEmpty());
  EXPECT_THAT(problems(), IsEmpty());
}

TEST_P(IndexTest, BatchLookupKeepsRequestOrder) {
  auto x = gen_xorb(80, 100);
  Key key = hash_of_seed(8080);
  auto y = gen_xorb(81, 10);
  ingest(own(build_shard({.xorbs = {&x}})));
  ingest(own(build_shard({.xorbs = {&y}, .key = key})));
  std::vector<Hash> q;
  for (int i = 0; i < 100; ++i) {
    q.push_back(x.raw[std::size_t(i)]);
    q.push_back(hash_of_seed(1000000 + std::uint64_t(i)));  // a miss
    if (i < 10) q.push_back(y.raw[std::size_t(i)]);
  }
  BatchResult out;
  ASSERT_TRUE(idx->lookup_batch(q, out));
  ASSERT_EQ(out.size(), q.size());
  std::size_t k = 0;
  for (int i = 0; i < 100; ++i) {
    auto hit = out.of(k++);
    ASSERT_EQ(hit.size(), 1u);
    EXPECT_EQ(hit[0].xorb, x.hash);
    EXPECT_EQ(hit[0].chunk_index, std::uint32_t(i));
    EXPECT_FALSE(out.shards(hit[0])[0].keyed);
    EXPECT_TRUE(out.of(k++).empty());
    if (i < 10) {
      auto khit = out.of(k++);
      ASSERT_EQ(khit.size(), 1u);
      EXPECT_EQ(khit[0].xorb, y.hash);
      EXPECT_TRUE(out.shards(khit[0])[0].keyed);
    }
  }
  // A xorb's chunks share one shard set.
  EXPECT_EQ(out.shard_sets.size(), 2u);
  // Reused output is cleared first.
  ASSERT_TRUE(idx->lookup_batch(std::span(q.data(), 1), out));
  EXPECT_EQ(out.size(), 1u);
}

// Searches are made in hash order, a span of queries at a time; the
// answers must still come back in the order of the queries, across spans.
TEST_P(IndexTest, BatchLookupLongerThanASortSpanKeepsRequestOrder) {
  auto x = gen_xorb(82, 100);
  auto y = gen_xorb(83, 10);
  ingest(own(build_shard({.xorbs = {&x}})));
  ingest(own(build_shard({.xorbs = {&y}, .key = hash_of_seed(8282)})));
  std::vector<Hash> q;
  for (std::uint64_t i = 0; i < 9000; ++i) {
    if (i % 3 == 0) q.push_back(x.raw[i % 100]);
    else if (i % 3 == 1) q.push_back(hash_of_seed(2000000 + i));
    else q.push_back(y.raw[i % 10]);
  }
  BatchResult out;
  ASSERT_TRUE(idx->lookup_batch(q, out));
  ASSERT_EQ(out.size(), q.size());
  for (std::uint64_t i = 0; i < q.size(); ++i) {
    auto hit = out.of(i);
    if (i % 3 == 1) {
      EXPECT_TRUE(hit.empty()) << i;
      continue;
    }
    ASSERT_EQ(hit.size(), 1u) << i;
    EXPECT_EQ(hit[0].xorb, i % 3 == 0 ? x.hash : y.hash) << i;
    EXPECT_EQ(hit[0].chunk_index, std::uint32_t(i % 3 == 0 ? i % 100 : i % 10)) << i;
  }
}

}  // namespace
}  // namespace dedupd::index::gen
