// Removal and expiry: shared xorbs kept until the last shard goes, the
// outcomes of a removal, expiry in order.
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

TEST_P(IndexTest, TwoShardsSharingXorbsKeepThemUntilTheLastGoes) {
  auto shared = gen_xorb(10, 30), only1 = gen_xorb(11, 5), only2 = gen_xorb(12, 6);
  auto s1 = own(build_shard({.xorbs = {&shared, &only1}, .files = {gen_file(1, shared, 0, 30, true, true)}}));
  auto s2 = own(build_shard(
      {.xorbs = {&only2, &shared}, .expiry = 2100000000, .files = {gen_file(1, shared, 0, 30, true, true)}}));
  ingest(s1, "/a.mdb");
  IngestResult r2 = ingest(s2, "/b.mdb");
  EXPECT_EQ(r2.new_xorbs, 1u);  // only `only2` is new
  EXPECT_EQ(r2.new_chunk_entries, 6u);
  EXPECT_EQ(r2.new_files, 0u);
  EXPECT_THAT(shard_hashes(find(shared.raw[3])[0].shards), UnorderedElementsAre(s1.hash, s2.hash));
  EXPECT_EQ(stats().chunk_entries, 41u);

  auto rm = idx->remove(s1.hash, 1234);
  ASSERT_TRUE(rm);
  EXPECT_EQ(rm->outcome, RemoveOutcome::removed);
  EXPECT_EQ(rm->shard->state, ShardState::removed);
  auto locs = find(shared.raw[3]);
  ASSERT_EQ(locs.size(), 1u);
  EXPECT_THAT(shard_hashes(locs[0].shards), ElementsAre(s2.hash));
  EXPECT_THAT(find(only1.raw[0]), IsEmpty());
  EXPECT_EQ(find(only2.raw[0]).size(), 1u);
  EXPECT_TRUE(idx->file(hash_of_seed(1 ^ 0xF11E))->has_value());
  EXPECT_EQ(stats().chunk_entries, 36u);
  EXPECT_THAT(problems(), IsEmpty());

  ASSERT_TRUE(idx->remove(s2.hash));
  EXPECT_THAT(find(shared.raw[3]), IsEmpty());
  EXPECT_THAT(find(only2.raw[0]), IsEmpty());
  EXPECT_FALSE(idx->file(hash_of_seed(1 ^ 0xF11E))->has_value());
  EXPECT_THAT(*idx->files_with_sha256(hash_of_seed(1 ^ 0x5A256)), IsEmpty());
  EXPECT_FALSE(*idx->next_expiry());
  EXPECT_THAT(problems(), IsEmpty());

  // Nothing left but the two small shard records, their sources and meta.
  idx.reset();
  auto items = table_items(tmp / "idx");
  for (const auto& [name, n] : items) {
    if (name == "shards" || name == "sources") {
      EXPECT_EQ(n, 2u) << name;
    } else if (name != "meta") {
      EXPECT_EQ(n, 0u) << name;
    }
  }
}

TEST_P(IndexTest, RemoveOutcomesAndRevive) {
  auto x = gen_xorb(40, 3);
  auto s = own(build_shard({.xorbs = {&x}}));
  EXPECT_EQ(idx->remove(s.hash)->outcome, RemoveOutcome::not_found);
  ingest(s, "/r.mdb");
  EXPECT_EQ(idx->remove(s.hash, 99)->outcome, RemoveOutcome::removed);
  auto again = idx->remove(s.hash);
  EXPECT_EQ(again->outcome, RemoveOutcome::not_live);
  EXPECT_EQ(again->shard->ended_at, 99u);
  // A rescan finding the file again does not bring it back...
  EXPECT_EQ(ingest(s, "/r.mdb").outcome, IngestOutcome::previously_gone);
  EXPECT_THAT(find(x.raw[0]), IsEmpty());
  auto listed = idx->shards(ShardState::removed);
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(listed->front().hash, s.hash);
  // ...an explicit ingest does.
  EXPECT_EQ(ingest(s, "/r.mdb", IngestOptions{.revive = true}).outcome, IngestOutcome::added);
  EXPECT_EQ(find(x.raw[0]).size(), 1u);
  Stats st = stats();
  EXPECT_EQ(st.shards_live, 1u);
  EXPECT_EQ(st.shards_removed, 0u);
  EXPECT_THAT(problems(), IsEmpty());
}

TEST_P(IndexTest, NextExpiryAndExpireFollowExpiryOrder) {
  auto x1 = gen_xorb(50, 2), x2 = gen_xorb(51, 2), x3 = gen_xorb(52, 2), x4 = gen_xorb(53, 2);
  auto late = own(build_shard({.xorbs = {&x1}, .expiry = 3000}));
  auto early = own(build_shard({.xorbs = {&x2}, .expiry = 1000}));
  auto mid = own(build_shard({.xorbs = {&x3}, .expiry = 2000}));
  auto never = own(build_shard({.xorbs = {&x4}}));
  auto zero = own(build_shard({.xorbs = {&x4}, .expiry = 0}));  // JS client: unset
  for (auto* s : {&late, &early, &mid, &never, &zero}) ingest(*s);
  EXPECT_EQ(*idx->next_expiry(), 1000u);
  EXPECT_EQ(stats().next_expiry, 1000u);
  EXPECT_THAT(*idx->due(2000), ElementsAre(early.hash, mid.hash));
  EXPECT_EQ(find(x2.raw[0]).size(), 1u) << "due() is a dry run";
  EXPECT_THAT(*idx->expire(999), IsEmpty());
  EXPECT_THAT(*idx->expire(2500), ElementsAre(early.hash, mid.hash));
  EXPECT_EQ(*idx->next_expiry(), 3000u);
  EXPECT_THAT(find(x2.raw[0]), IsEmpty());
  EXPECT_EQ(find(x1.raw[0]).size(), 1u);
  EXPECT_THAT(*idx->expire(UINT64_MAX - 1), ElementsAre(late.hash));
  EXPECT_FALSE(*idx->next_expiry());
  EXPECT_EQ(find(x4.raw[0]).size(), 1u) << "never-expiring shards stay";
  Stats st = stats();
  EXPECT_EQ(st.shards_expired, 3u);
  EXPECT_EQ(st.shards_live, 2u);
  EXPECT_THAT(problems(), IsEmpty());
}

}  // namespace
}  // namespace dedupd::index::gen
