// The Reader against a real PostgreSQL: lookups of chunks (keyed too),
// xorbs, files and sha256s, its cache, a blocked server, the hot standby, an
// outage.
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

TEST_F(FleetTest, AnEmptyBlockIsAnEmptyAnswer) {
  auto w = writer(url_, "a");
  auto r = reader(url_);
  ASSERT_TRUE(r);
  auto a = lookup(*r, {});
  EXPECT_EQ(a.size(), 0u);
  EXPECT_TRUE(a.locations.empty());
}

// The Reader's xorb cache keeps a hit's holders for holders_max_age: a hit
// answered from it names the shard's CASes as one read afresh does.
TEST_F(FleetTest, AHitAnsweredFromTheCacheNamesItsCas) {
  auto w = writer(url_, "a");
  auto r = reader(url_, std::chrono::hours(1));
  ASSERT_TRUE(w && r);
  GenXorb x = index::gen::gen_xorb(43, 5);
  auto s = make_shard({&x}, 1);
  publish(*w, s, "https://cas-a.example");
  std::vector<Hash> q = {x.raw[0]};
  auto ans = lookup(*r, q);
  ASSERT_EQ(ans.of(0).size(), 1u);
  EXPECT_EQ(r->last_lookup().holders_read, 1u);
  EXPECT_EQ(cas_of(ans, ans.of(0)[0]), std::vector<std::string>{"https://cas-a.example"});
  ans = lookup(*r, q);
  ASSERT_EQ(ans.of(0).size(), 1u);
  EXPECT_EQ(r->last_lookup().holders_read, 0u) << "not answered from the cache";
  EXPECT_EQ(cas_of(ans, ans.of(0)[0]), std::vector<std::string>{"https://cas-a.example"});
  // What the fleet learned since shows with fresh holders (the global-dedup
  // reply's candidates are read so).
  auto b = writer(url_, "b");
  ASSERT_TRUE(b);
  EXPECT_TRUE(publish(*b, s, "https://cas-b.example").cas_learned);
  ans = lookup(*r, q, true);
  ASSERT_EQ(ans.of(0).size(), 1u);
  EXPECT_EQ(cas_of(ans, ans.of(0)[0]), std::vector<std::string>{"https://cas-a.example https://cas-b.example"});
}

TEST_F(FleetTest, KeyedShardsAreFoundByRawHashUnderEachLiveKey) {
  auto w = writer(url_, "a");
  auto r = reader(url_);
  ASSERT_TRUE(w && r);
  GenXorb raw = index::gen::gen_xorb(10, 6), k1x = index::gen::gen_xorb(11, 6), k2x = index::gen::gen_xorb(12, 6);
  Key k1 = index::gen::hash_of_seed(1001), k2 = index::gen::hash_of_seed(1002);
  publish(*w, make_shard({&raw}, 1));
  // The reader knows no key yet: the answer's key list makes it ask again.
  std::vector<Hash> q = {raw.raw[0], k1x.raw[2], k2x.raw[3]};
  auto before = lookup(*r, q);
  EXPECT_EQ(before.of(1).size(), 0u);
  publish(*w, make_shard({&k1x}, 2, k1, 5000));
  publish(*w, make_shard({&k2x}, 3, k2, 5000));
  auto a = lookup(*r, q);
  ASSERT_EQ(a.of(0).size(), 1u);
  EXPECT_FALSE(a.of(0)[0].keyed);
  ASSERT_EQ(a.of(1).size(), 1u);
  EXPECT_TRUE(a.of(1)[0].keyed);
  EXPECT_EQ(a.of(1)[0].key, k1);
  EXPECT_EQ(a.of(1)[0].xorb, k1x.hash);
  EXPECT_EQ(a.of(1)[0].chunk_index, 2u);
  ASSERT_EQ(a.of(2).size(), 1u);
  EXPECT_EQ(a.of(2)[0].key, k2);
  // The same xorb stored raw and keyed is two forms.
  publish(*w, make_shard({&k1x}, 4));
  auto xa = r->xorb(k1x.hash, Deadline::in(kDeadline));
  ASSERT_TRUE(xa);
  ASSERT_TRUE(xa->has_value());
  EXPECT_EQ((*xa)->forms.size(), 2u);
  std::vector<Hash> q1 = {k1x.raw[2]};
  EXPECT_EQ(lookup(*r, q1).of(0).size(), 2u);
}

TEST_F(FleetTest, XorbFileAndSha256Answers) {
  auto w = writer(url_, "a");
  auto r = reader(url_);
  ASSERT_TRUE(w && r);
  GenXorb x = index::gen::gen_xorb(13, 8);
  auto file = index::gen::gen_file(13, x, 0, 8, true, true);
  auto s = make_shard({&x}, 1, {}, {}, {file});
  auto out = publish(*w, s);
  EXPECT_EQ(out.new_files, 1u);
  auto xa = r->xorb(x.hash, Deadline::in(kDeadline));
  ASSERT_TRUE(xa) << xa.error().to_string();
  ASSERT_TRUE(xa->has_value());
  ASSERT_EQ((*xa)->forms.size(), 1u);
  const auto& form = (*xa)->forms[0];
  EXPECT_FALSE(form.keyed);
  EXPECT_EQ(form.cas_block.size(), 48u * 9);
  shard::XorbBlock block(form.cas_block.data(), 0);
  EXPECT_EQ(block.hash(), x.hash);
  EXPECT_EQ(block.chunk(7).chunk_hash, x.raw[7]);
  ASSERT_EQ(form.shards.size(), 1u);
  EXPECT_EQ(form.shards[0].holders, std::vector<std::string>{"a"});

  auto fa = r->file(file.header.file_hash, Deadline::in(kDeadline));
  ASSERT_TRUE(fa) << fa.error().to_string();
  ASSERT_TRUE(fa->has_value());
  shard::FileBlock fb((*fa)->block.data(), 0);
  EXPECT_EQ(fb.hash(), file.header.file_hash);
  EXPECT_EQ(fb.num_terms(), 1u);
  EXPECT_EQ(fb.term(0).xorb_hash, x.hash);
  ASSERT_TRUE((*fa)->sha256.has_value());
  EXPECT_EQ(*(*fa)->sha256, file.metadata_ext->hash);
  auto by_sha = r->files_with_sha256(file.metadata_ext->hash, Deadline::in(kDeadline));
  ASSERT_TRUE(by_sha);
  EXPECT_EQ(*by_sha, std::vector<Hash>{file.header.file_hash});

  auto none = r->xorb(index::gen::hash_of_seed(5), Deadline::in(kDeadline));
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->has_value());
  ASSERT_TRUE(w->drop_hold(s.hash));
  auto gone = r->file(file.header.file_hash, Deadline::in(kDeadline));
  ASSERT_TRUE(gone);
  EXPECT_FALSE(gone->has_value());
}

TEST_F(FleetTest, ALookupBlockedOnTheServerReturnsTimeout) {
  auto w = writer(url_, "a");
  ASSERT_TRUE(w);
  GenXorb x = index::gen::gen_xorb(14, 3);
  publish(*w, make_shard({&x}, 1));
  auto r = reader(url_);
  ASSERT_TRUE(r);
  // Another session holds a lock the lookup needs: the server is slow.
  Admin locker(url_);
  locker.one("BEGIN");
  locker.one("LOCK TABLE dedupd.xorb IN ACCESS EXCLUSIVE MODE");
  std::vector<Hash> q = {x.raw[0]};
  ChunkAnswers out;
  auto res = r->lookup_chunks(q, out, Deadline::in(std::chrono::milliseconds(200)));
  ASSERT_FALSE(res);
  EXPECT_EQ(res.error().rule, kRuleTimeout);
  locker.one("ROLLBACK");
  // The next call connects again and answers.
  auto a = lookup(*r, q);
  EXPECT_EQ(a.of(0).size(), 1u);
}

TEST_F(FleetTest, ReadsOnTheHotStandby) {
  auto w = writer(url_, "a");
  ASSERT_TRUE(w);
  GenXorb x = index::gen::gen_xorb(15, 9);
  publish(*w, make_shard({&x}, 1));
  Cluster::shared().wait_standby_caught_up();
  auto r = reader(Cluster::shared().standby_url(db_));
  ASSERT_TRUE(r);
  auto st = r->status(Deadline::in(kDeadline));
  ASSERT_TRUE(st) << st.error().to_string();
  EXPECT_TRUE(st->standby);
  EXPECT_EQ(st->entries, 9u);
  std::vector<Hash> q = {x.raw[8]};
  auto a = lookup(*r, q);
  ASSERT_EQ(a.of(0).size(), 1u);
  EXPECT_EQ(holders(a, a.of(0)[0]), std::vector<std::string>{"a"});
  // With both hosts listed, reads prefer the standby.
  auto both = reader(Cluster::shared().both_url(db_));
  ASSERT_TRUE(both);
  st = both->status(Deadline::in(kDeadline));
  ASSERT_TRUE(st);
  EXPECT_TRUE(st->standby);
}

// Tests that stop or promote servers run on a cluster of their own.
TEST(FleetOutage, AStoppedServerCostsAtMostTheDeadline) {
  Cluster own = Cluster::start_own();
  std::string url = own.primary_url("postgres");
  auto w = writer(url, "a");
  ASSERT_TRUE(w);
  GenXorb x = index::gen::gen_xorb(16, 3);
  publish(*w, make_shard({&x}, 1));
  auto r = reader(url);
  ASSERT_TRUE(r);
  auto pids = own.sigstop_primary();
  ASSERT_GE(pids.size(), 2u);
  std::vector<Hash> q = {x.raw[0]};
  ChunkAnswers out;
  auto res = r->lookup_chunks(q, out, Deadline::in(std::chrono::milliseconds(100)));
  // A new connection to the stopped server is bounded the same way.
  auto fresh = Reader::lazy(options(url, "r2"));
  auto res2 = fresh->lookup_chunks(q, out, Deadline::in(std::chrono::milliseconds(100)));
  for (int pid : pids) ::kill(pid, SIGCONT);
  ASSERT_FALSE(res);
  EXPECT_EQ(res.error().rule, kRuleTimeout);
  ASSERT_FALSE(res2);
  EXPECT_EQ(res2.error().rule, kRuleTimeout);
  // With a retry pause, the next call answers unavailable without waiting.
  auto o = options(url, "r3");
  o.retry_after = std::chrono::hours(1);
  auto paused = Reader::lazy(o);
  pids = own.sigstop_primary();
  auto first = paused->lookup_chunks(q, out, Deadline::in(std::chrono::milliseconds(50)));
  auto second = paused->lookup_chunks(q, out, Deadline::in(std::chrono::hours(1)));
  for (int pid : pids) ::kill(pid, SIGCONT);
  ASSERT_FALSE(first);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().rule, kRuleUnavailable);
  // Continued: answers again.
  EXPECT_EQ(lookup(*r, q).of(0).size(), 1u);
}

}  // namespace
}  // namespace dedupd::fleet
