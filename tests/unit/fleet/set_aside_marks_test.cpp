// The fleet-wide set-aside marks against a real PostgreSQL.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "fleet/fleet.hpp"
#include "fleet/migrations.hpp"
#include "fleet/partitions.hpp"
#include "fleet/schema_version.hpp"
#include "fleet/xorb_cache.hpp"
#include "tests/unit/fleet/answer_support.hpp"
#include "tests/unit/fleet/fleet_fixture.hpp"
#include "tests/unit/fleet/pg_support.hpp"
#include "tests/unit/index/gen.hpp"

namespace dedupd::fleet {
namespace {

// FleetTest, its Writer and Reader, the server and the shards (fleet_fixture.hpp).
using namespace test;

// The set-aside marks: one per (shard, CAS), the first reason kept, all of
// a shard's going together.
TEST_F(FleetTest, SetAsideMarksAreOnePerShardAndCasAndGoTogether) {
  auto a = writer(url_, "a");
  auto b = writer(url_, "b");
  ASSERT_TRUE(a && b);
  shard::Hash h{}, other{};
  h.bytes[0] = 1;
  other.bytes[0] = 2;
  auto first = a->mark_set_aside(h, "https://cas-1", "refused first");
  ASSERT_TRUE(first) << first.error().to_string();
  EXPECT_TRUE(*first);
  EXPECT_FALSE(*b->mark_set_aside(h, "https://cas-1", "refused again"));
  EXPECT_TRUE(*b->mark_set_aside(h, "https://cas-2", "refused there"));
  EXPECT_TRUE(*b->mark_set_aside(other, "https://cas-1", "another"));
  auto marks = a->set_aside_marks();
  ASSERT_TRUE(marks);
  std::vector<std::string> seen;
  for (const auto& m : *marks)
    seen.push_back(m.shard.to_hex_bytes().substr(0, 2) + " " + m.cas + " " + m.host + " " + m.reason);
  EXPECT_EQ(seen, (std::vector<std::string>{"01 https://cas-1 a refused first", "01 https://cas-2 b refused there",
                                            "02 https://cas-1 b another"}));
  // One CAS accepted the shard again: its mark goes, the other CAS's stays.
  EXPECT_EQ(*a->unmark_set_aside(h, "https://cas-2"), 1u);
  EXPECT_EQ(*a->unmark_set_aside(h, "https://cas-2"), 0u);
  EXPECT_EQ(a->set_aside_marks()->size(), 2u);
  EXPECT_EQ(*b->unmark_set_aside(h), 1u);
  EXPECT_EQ(a->set_aside_marks()->size(), 1u);
}

// A refusal relying on answers from the fleet marks the fleet's shards that
// hold the xorbs it relied on: those of the refusing CAS, and those of no
// known CAS only when they answered that CAS too; a shard of another CAS,
// or one without the xorbs, is left alone. Marking twice marks nothing new.
TEST_F(FleetTest, TheHoldersOfTheXorbsARefusalReliedOnAreMarked) {
  auto w = writer(url_, "host-m");
  ASSERT_TRUE(w);
  GenXorb lost = index::gen::gen_xorb(9161, 4), kept = index::gen::gen_xorb(9162, 4);
  auto of_cas = make_shard({&lost}, 81), of_other = make_shard({&lost}, 82), of_none = make_shard({&lost}, 83),
       without = make_shard({&kept}, 84);
  ASSERT_EQ(publish(*w, of_cas, "https://cas-a.example").result, PublishResult::added);
  ASSERT_EQ(publish(*w, of_other, "https://cas-b.example").result, PublishResult::added);
  ASSERT_EQ(publish(*w, of_none).result, PublishResult::added);
  ASSERT_EQ(publish(*w, without, "https://cas-a.example").result, PublishResult::added);
  const std::vector<Hash> relied_on = {lost.hash};
  auto scoped = w->mark_holders_set_aside(relied_on, "https://cas-a.example", false, "refused");
  ASSERT_TRUE(scoped) << scoped.error().to_string();
  EXPECT_EQ(*scoped, std::vector<Hash>{of_cas.hash});
  auto with_unknown = w->mark_holders_set_aside(relied_on, "https://cas-a.example", true, "refused");
  ASSERT_TRUE(with_unknown);
  EXPECT_EQ(*with_unknown, std::vector<Hash>{of_none.hash});  // of_cas is marked already
  auto marks = w->set_aside_marks();
  ASSERT_TRUE(marks);
  std::vector<std::string> seen;
  for (const auto& m : *marks) seen.push_back(m.shard.to_string() + " " + m.cas + " " + m.host);
  std::vector<std::string> want = {of_cas.hash.to_string() + " https://cas-a.example host-m",
                                   of_none.hash.to_string() + " https://cas-a.example host-m"};
  std::sort(seen.begin(), seen.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(seen, want);
  EXPECT_TRUE(w->mark_holders_set_aside(std::vector<Hash>{}, "https://cas-a.example", true, "none")->empty());
}

}  // namespace
}  // namespace dedupd::fleet
