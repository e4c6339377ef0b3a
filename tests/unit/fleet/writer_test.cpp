// The Writer against a real PostgreSQL: publish, holds, expiry, forgetting a
// host, concurrent writers, a blocked or cut-off write, a promoted standby.
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

TEST_F(FleetTest, BadHostNameIsRefused) {
  auto w = Writer::connect(options(url_, "a b"));
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().rule, kRuleArgument);
}

TEST_F(FleetTest, PublishIsIdempotentAndLookupsFindEveryChunk) {
  auto w = writer(url_, "host-a");
  auto r = reader(url_);
  ASSERT_TRUE(w && r);
  GenXorb x1 = index::gen::gen_xorb(1, 50), x2 = index::gen::gen_xorb(2, 7);
  auto s = make_shard({&x1, &x2}, 1);
  auto first = publish(*w, s);
  EXPECT_EQ(first.result, PublishResult::added);
  EXPECT_EQ(first.new_xorbs, 2u);
  EXPECT_EQ(first.new_chunk_entries, 57u);
  auto second = publish(*w, s);
  EXPECT_EQ(second.result, PublishResult::already_held);
  EXPECT_EQ(second.new_chunk_entries, 0u);

  std::vector<Hash> q = {x1.raw[0], x1.raw[49], x2.raw[3], index::gen::hash_of_seed(999999)};
  auto a = lookup(*r, q);
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(a.of(0).size(), 1u);
  EXPECT_EQ(a.of(0)[0].xorb, x1.hash);
  EXPECT_EQ(a.of(0)[0].chunk_index, 0u);
  EXPECT_EQ(a.of(0)[0].byte_start, 0u);
  EXPECT_EQ(a.of(0)[0].byte_end, x1.sizes[0]);
  EXPECT_FALSE(a.of(0)[0].keyed);
  ASSERT_EQ(a.of(1).size(), 1u);
  EXPECT_EQ(a.of(1)[0].chunk_index, 49u);
  EXPECT_EQ(a.of(1)[0].byte_start, x1.byte_start(49));
  ASSERT_EQ(a.of(2).size(), 1u);
  EXPECT_EQ(a.of(2)[0].xorb, x2.hash);
  EXPECT_EQ(a.of(3).size(), 0u);
  ASSERT_EQ(a.shards(a.of(0)[0]).size(), 1u);
  EXPECT_EQ(a.shards(a.of(0)[0])[0].shard, s.hash);
  EXPECT_EQ(holders(a, a.of(0)[0]), std::vector<std::string>{"host-a"});

  auto st = r->status(Deadline::in(kDeadline));
  ASSERT_TRUE(st) << st.error().to_string();
  EXPECT_EQ(st->shards, 1u);
  EXPECT_EQ(st->entries, 57u);
  EXPECT_EQ(st->xorbs, 2u);
  EXPECT_FALSE(st->standby);
  ASSERT_EQ(st->hosts.size(), 1u);
  EXPECT_EQ(st->hosts[0].name, "host-a");
  EXPECT_EQ(st->hosts[0].holds, 1u);
  EXPECT_TRUE(st->hosts[0].last_contact.has_value());
  Admin admin(url_);
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.chunk"), "57");
}

TEST_F(FleetTest, AShardWithNothingInItIsPublishedAndDropped) {
  auto w = writer(url_, "a");
  ASSERT_TRUE(w);
  auto empty = make_shard({}, 1);
  auto out = publish(*w, empty);
  EXPECT_EQ(out.result, PublishResult::added);
  EXPECT_EQ(out.new_chunk_entries, 0u);
  auto dropped = w->drop_hold(empty.hash);
  ASSERT_TRUE(dropped) << dropped.error().to_string();
  EXPECT_TRUE(*dropped);
  Admin admin(url_);
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.shard"), "0");
}

// Anti-entropy's view of the fleet: this host's shards only, in byte order,
// page by page.
TEST_F(FleetTest, HeldShardsListsThisHostsShardsInHashOrderPageByPage) {
  auto a = writer(url_, "a"), b = writer(url_, "b");
  ASSERT_TRUE(a && b);
  std::vector<OwnedShard> shards;
  for (std::uint64_t i = 0; i < 5; ++i) shards.push_back(make_shard({}, 100 + i));
  std::vector<Hash> mine;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    publish(i == 4 ? *b : *a, shards[i]);
    if (i != 4) mine.push_back(shards[i].hash);
  }
  std::sort(mine.begin(), mine.end());
  std::vector<Hash> seen;
  std::optional<Hash> after;
  for (int pages = 0; pages < 10; ++pages) {
    auto page = a->held_shards(after, 3);
    ASSERT_TRUE(page) << page.error().to_string();
    seen.insert(seen.end(), page->begin(), page->end());
    if (page->size() < 3) break;
    after = page->back();
  }
  EXPECT_EQ(seen, mine);
  auto none = b->held_shards(shards[4].hash, 10);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

TEST_F(FleetTest, TheSameShardFromTwoHostsIsOneShardWithTwoHolders) {
  auto a = writer(url_, "a");
  auto b = writer(url_, "b");
  auto r = reader(url_, std::chrono::milliseconds(0));
  ASSERT_TRUE(a && b && r);
  GenXorb x = index::gen::gen_xorb(3, 10);
  auto s = make_shard({&x}, 1);
  EXPECT_EQ(publish(*a, s).result, PublishResult::added);
  auto second = publish(*b, s);
  EXPECT_EQ(second.result, PublishResult::new_holder);
  EXPECT_EQ(second.new_chunk_entries, 0u);
  std::vector<Hash> q = {x.raw[5]};
  auto ans = lookup(*r, q);
  ASSERT_EQ(ans.of(0).size(), 1u);
  EXPECT_EQ(holders(ans, ans.of(0)[0]), std::vector<std::string>{"a,b"});
  Admin admin(url_);
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.shard"), "1");
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.chunk"), "10");

  // A lets go: B still holds it.
  auto dropped = a->drop_hold(s.hash);
  ASSERT_TRUE(dropped);
  EXPECT_TRUE(*dropped);
  ans = lookup(*r, q);
  ASSERT_EQ(ans.of(0).size(), 1u);
  EXPECT_EQ(holders(ans, ans.of(0)[0]), std::vector<std::string>{"b"});
  // Twice is harmless.
  dropped = a->drop_hold(s.hash);
  ASSERT_TRUE(dropped);
  EXPECT_FALSE(*dropped);
  // The last holder's drop takes the entries out.
  dropped = b->drop_hold(s.hash);
  ASSERT_TRUE(dropped);
  EXPECT_TRUE(*dropped);
  ans = lookup(*r, q);
  EXPECT_EQ(ans.of(0).size(), 0u);
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.chunk"), "0");
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.xorb"), "0");
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.shard"), "0");
}

// Schema 4: a shard records the CASes that accepted it (issue 41). Each
// publish adds its host's CASes to the shard's set, whoever published it
// first; a replay, or a publish of an unknown CAS, changes nothing. Lookups,
// xorb and file answers name the set.
TEST_F(FleetTest, APublishedShardCarriesTheUnionOfItsHostsCases) {
  auto a = writer(url_, "a");
  auto b = writer(url_, "b");
  auto r = reader(url_, std::chrono::milliseconds(0));
  ASSERT_TRUE(a && b && r);
  GenXorb x = index::gen::gen_xorb(41, 6);
  auto file = index::gen::gen_file(41, x, 0, 6, true, true);
  auto s = make_shard({&x}, 1, {}, {}, {file});
  // A URL's path may hold what separates holders and shards in an answer.
  const std::string cas_a = "https://cas-a.example/x,y=z;w", cas_b = "http://127.0.0.1:8081";
  auto first = publish(*a, s, cas_a);
  EXPECT_EQ(first.result, PublishResult::added);
  EXPECT_FALSE(first.cas_learned);
  std::vector<Hash> q = {x.raw[2]};
  auto ans = lookup(*r, q);
  ASSERT_EQ(ans.of(0).size(), 1u);
  EXPECT_EQ(cas_of(ans, ans.of(0)[0]), std::vector<std::string>{cas_a});
  EXPECT_EQ(holders(ans, ans.of(0)[0]), std::vector<std::string>{"a"});

  auto second = publish(*b, s, cas_b);
  EXPECT_EQ(second.result, PublishResult::new_holder);
  EXPECT_TRUE(second.cas_learned);
  ans = lookup(*r, q);
  ASSERT_EQ(ans.of(0).size(), 1u);
  // Sorted, not in the order learned: the set is the same whoever came first.
  EXPECT_EQ(cas_of(ans, ans.of(0)[0]), std::vector<std::string>{cas_b + " " + cas_a});
  EXPECT_EQ(holders(ans, ans.of(0)[0]), std::vector<std::string>{"a,b"});

  // Replays and unknown CASes take nothing away.
  EXPECT_FALSE(publish(*a, s, cas_a).cas_learned);
  EXPECT_FALSE(publish(*b, s, cas_b + " " + cas_a).cas_learned);
  EXPECT_EQ(publish(*a, s).result, PublishResult::already_held);
  // A host that had it of unknown CAS learns one: the fleet learns it too.
  auto c = writer(url_, "c");
  ASSERT_TRUE(c);
  EXPECT_EQ(publish(*c, s).result, PublishResult::new_holder);
  auto learned = publish(*c, s, "https://cas-c.example");
  EXPECT_EQ(learned.result, PublishResult::already_held);
  EXPECT_TRUE(learned.cas_learned);
  const std::string all = cas_b + " " + cas_a + " https://cas-c.example";
  ans = lookup(*r, q);
  ASSERT_EQ(ans.of(0).size(), 1u);
  EXPECT_EQ(cas_of(ans, ans.of(0)[0]), std::vector<std::string>{all});
  Admin admin(url_);
  EXPECT_EQ(admin.one("SELECT array_length(cas, 1) FROM dedupd.shard"), "3");

  auto xa = r->xorb(x.hash, Deadline::in(kDeadline));
  ASSERT_TRUE(xa && *xa);
  ASSERT_EQ((*xa)->forms.size(), 1u);
  ASSERT_EQ((*xa)->forms[0].shards.size(), 1u);
  EXPECT_EQ((*xa)->forms[0].shards[0].cas, all);
  auto fa = r->file(file.header.file_hash, Deadline::in(kDeadline));
  ASSERT_TRUE(fa && *fa);
  ASSERT_EQ((*fa)->shards.size(), 1u);
  EXPECT_EQ((*fa)->shards[0].cas, all);

  // A shard of unknown CAS says none; a CAS set of another shape is refused.
  GenXorb y = index::gen::gen_xorb(42, 3);
  auto unknown = make_shard({&y}, 2);
  publish(*a, unknown);
  std::vector<Hash> qy = {y.raw[1]};
  ans = lookup(*r, qy);
  ASSERT_EQ(ans.of(0).size(), 1u);
  EXPECT_EQ(cas_of(ans, ans.of(0)[0]), std::vector<std::string>{""});
  for (const std::string bad :
       {" https://x.example", "https://x.example ", "a  b", "https://x.example\t", "caf\xc3\xa9"}) {
    auto refused = a->publish(*unknown.view, unknown.hash, bad);
    ASSERT_FALSE(refused) << bad;
    EXPECT_EQ(refused.error().rule, kRuleArgument);
  }
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.shard WHERE cas IS NULL"), "1");
}

TEST_F(FleetTest, EntriesSharedByShardsStayWhileOneHoldsThem) {
  auto w = writer(url_, "a");
  auto r = reader(url_, std::chrono::milliseconds(0));
  ASSERT_TRUE(w && r);
  GenXorb shared = index::gen::gen_xorb(4, 20), only1 = index::gen::gen_xorb(5, 3);
  auto s1 = make_shard({&shared, &only1}, 1);
  auto s2 = make_shard({&shared}, 2);
  publish(*w, s1);
  auto second = publish(*w, s2);
  EXPECT_EQ(second.result, PublishResult::added);
  EXPECT_EQ(second.new_xorbs, 0u);
  std::vector<Hash> q = {shared.raw[0], only1.raw[0]};
  auto a = lookup(*r, q);
  ASSERT_EQ(a.of(0).size(), 1u);
  EXPECT_EQ(a.shards(a.of(0)[0]).size(), 2u);

  ASSERT_TRUE(w->drop_hold(s1.hash));
  a = lookup(*r, q);
  ASSERT_EQ(a.of(0).size(), 1u);
  EXPECT_EQ(a.shards(a.of(0)[0]).size(), 1u);
  EXPECT_EQ(a.shards(a.of(0)[0])[0].shard, s2.hash);
  EXPECT_EQ(a.of(1).size(), 0u);
  Admin admin(url_);
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.chunk"), "20");
  ASSERT_TRUE(w->drop_hold(s2.hash));
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.chunk"), "0");
}

TEST_F(FleetTest, ExpiryTakesOutShardsPastTheirKeyExpiryOnce) {
  auto w = writer(url_, "a");
  auto r = reader(url_);
  ASSERT_TRUE(w && r);
  GenXorb x1 = index::gen::gen_xorb(6, 4), x2 = index::gen::gen_xorb(7, 4);
  Key key = index::gen::hash_of_seed(77);
  auto expiring = make_shard({&x1}, 1, key, 1000);
  auto forever = make_shard({&x2}, 2);
  publish(*w, expiring);
  publish(*w, forever);
  auto n = w->expire(999);
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, 0u);
  std::vector<Hash> q = {x1.raw[1], x2.raw[1]};
  auto a = lookup(*r, q);
  EXPECT_EQ(a.of(0).size(), 1u);
  n = w->expire(1000);
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, 1u);
  n = w->expire(1000);
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, 0u);
  a = lookup(*r, q);
  EXPECT_EQ(a.of(0).size(), 0u);
  EXPECT_EQ(a.of(1).size(), 1u);
  Admin admin(url_);
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.chunk_key WHERE shards > 0"), "0");
}

TEST_F(FleetTest, ForgetHostDropsItsHoldsAndWhatOnlyItHeld) {
  auto a = writer(url_, "a");
  auto b = writer(url_, "b");
  auto r = reader(url_);
  ASSERT_TRUE(a && b && r);
  GenXorb x1 = index::gen::gen_xorb(8, 5), x2 = index::gen::gen_xorb(9, 5);
  auto alone = make_shard({&x1}, 1);
  auto both = make_shard({&x2}, 2);
  publish(*a, alone);
  publish(*a, both);
  publish(*b, both);
  auto f = b->forget_host("a");
  ASSERT_TRUE(f) << f.error().to_string();
  EXPECT_TRUE(*f);
  std::vector<Hash> q = {x1.raw[0], x2.raw[0]};
  auto ans = lookup(*r, q);
  EXPECT_EQ(ans.of(0).size(), 0u);
  ASSERT_EQ(ans.of(1).size(), 1u);
  EXPECT_EQ(holders(ans, ans.of(1)[0]), std::vector<std::string>{"b"});
  f = b->forget_host("a");
  ASSERT_TRUE(f);
  EXPECT_FALSE(*f);
  auto st = r->status(Deadline::in(kDeadline));
  ASSERT_TRUE(st);
  ASSERT_EQ(st->hosts.size(), 1u);
  EXPECT_EQ(st->hosts[0].name, "b");
}

TEST_F(FleetTest, ConcurrentPublishersAndDroppersSharingXorbsLeaveNoStrayRow) {
  // A pool of xorbs; each host publishes shards of overlapping subsets in
  // its own order, then drops them, all at once.
  std::vector<GenXorb> pool;
  for (int i = 0; i < 12; ++i) pool.push_back(index::gen::gen_xorb(100 + i, 16));
  auto shards_for = [&](int host) {
    std::vector<OwnedShard> out;
    for (int s = 0; s < 10; ++s) {
      std::vector<const GenXorb*> xs;
      for (int k = 0; k < 4; ++k) xs.push_back(&pool[(s * 3 + k * (host + 1)) % pool.size()]);
      out.push_back(make_shard(xs, 1000 + s * 7 + (s % 2 ? 0 : host)));  // even: the hosts' own shards
    }
    return out;
  };
  std::vector<OwnedShard> mine[2] = {shards_for(0), shards_for(1)};
  std::vector<std::string> failures[2];
  auto run = [&](int host) {
    auto w = Writer::connect(options(url_, host ? "b" : "a"));
    if (!w) {
      failures[host].push_back(w.error().to_string());
      return;
    }
    for (const auto& s : mine[host])
      if (auto r = (*w)->publish(*s.view, s.hash); !r) failures[host].push_back(r.error().to_string());
    for (const auto& s : mine[host])
      if (auto r = (*w)->drop_hold(s.hash); !r) failures[host].push_back(r.error().to_string());
  };
  std::thread t0(run, 0), t1(run, 1);
  t0.join();
  t1.join();
  EXPECT_EQ(failures[0], std::vector<std::string>{});
  EXPECT_EQ(failures[1], std::vector<std::string>{});
  Admin admin(url_);
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.shard"), "0");
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.hold"), "0");
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.xorb"), "0");
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.chunk"), "0");
}

TEST_F(FleetTest, ConcurrentPublishersKeepEveryChunkOnce) {
  std::vector<GenXorb> pool;
  for (int i = 0; i < 8; ++i) pool.push_back(index::gen::gen_xorb(200 + i, 16));
  std::vector<OwnedShard> shards;
  for (int s = 0; s < 8; ++s) shards.push_back(make_shard({&pool[s], &pool[(s + 1) % 8], &pool[(s + 3) % 8]}, 50 + s));
  std::vector<std::string> failures[2];
  auto run = [&](int host) {
    auto w = Writer::connect(options(url_, host ? "b" : "a"));
    if (!w) {
      failures[host].push_back(w.error().to_string());
      return;
    }
    for (std::size_t i = 0; i < shards.size(); ++i) {
      const auto& s = shards[host ? shards.size() - 1 - i : i];
      if (auto r = (*w)->publish(*s.view, s.hash); !r) failures[host].push_back(r.error().to_string());
    }
  };
  std::thread t0(run, 0), t1(run, 1);
  t0.join();
  t1.join();
  EXPECT_EQ(failures[0], std::vector<std::string>{});
  EXPECT_EQ(failures[1], std::vector<std::string>{});
  Admin admin(url_);
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.shard"), "8");
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.hold"), "16");
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.xorb"), "8");
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.chunk"), std::to_string(8 * 16));
  EXPECT_EQ(admin.one("SELECT string_agg(refs::text, ',') FROM dedupd.xorb"), "3,3,3,3,3,3,3,3");
}

TEST_F(FleetTest, AWriteBlockedOnTheServerReturnsTimeoutAndTheNextOneWorks) {
  ASSERT_TRUE(migrate(options(url_, "a")));  // the schema first, without the short bound
  auto o = options(url_, "a");
  o.statement_timeout = std::chrono::milliseconds(200);
  auto w = Writer::connect(o);
  ASSERT_TRUE(w) << w.error().to_string();
  GenXorb x = index::gen::gen_xorb(19, 3);
  auto s = make_shard({&x}, 1);
  Admin locker(url_);
  locker.one("BEGIN");
  locker.one("LOCK TABLE dedupd.shard IN ACCESS EXCLUSIVE MODE");
  auto blocked = (*w)->publish(*s.view, s.hash);
  ASSERT_FALSE(blocked);
  EXPECT_EQ(blocked.error().rule, kRuleTimeout);
  locker.one("ROLLBACK");
  auto again = (*w)->publish(*s.view, s.hash);
  ASSERT_TRUE(again) << again.error().to_string();
  EXPECT_EQ(again->result, PublishResult::added);
}

TEST_F(FleetTest, APublishCutOffHalfwayLeavesNothingAndIsDoneWholeAgain) {
  ASSERT_TRUE(migrate(options(url_, "a")));
  auto o = options(url_, "a");
  o.statement_timeout = std::chrono::milliseconds(300);
  auto w = Writer::connect(o);
  ASSERT_TRUE(w) << w.error().to_string();
  GenXorb x = index::gen::gen_xorb(20, 40);
  auto s = make_shard({&x}, 1, {}, {}, {index::gen::gen_file(20, x, 0, 40, true, true)});
  // The xorbs and their chunk rows go in, then the file insert waits on a
  // lock past the bound: the connection is dropped mid-transaction.
  Admin locker(url_);
  locker.one("BEGIN");
  locker.one("LOCK TABLE dedupd.file IN ACCESS EXCLUSIVE MODE");
  auto cut = (*w)->publish(*s.view, s.hash);
  ASSERT_FALSE(cut);
  EXPECT_EQ(cut.error().rule, kRuleTimeout);
  locker.one("ROLLBACK");
  // The writer closed its connection; the abandoned server session rolls
  // back when it next reads from it. Progress decides, the bound only stops
  // a hang.
  Admin admin(url_);
  for (int i = 0; i < 3000; ++i) {
    if (admin.one("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND "
                  "application_name = 'dedupd'") == "0")
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.chunk"), "0");
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.xorb"), "0");
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.shard"), "0");
  auto again = (*w)->publish(*s.view, s.hash);
  ASSERT_TRUE(again) << again.error().to_string();
  EXPECT_EQ(again->result, PublishResult::added);
  EXPECT_EQ(again->new_chunk_entries, 40u);
  EXPECT_EQ(again->new_files, 1u);
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.chunk"), "40");
}

TEST(FleetFailover, PublishingContinuesOnThePromotedStandby) {
  Cluster own = Cluster::start_own();
  own.add_standby();
  std::string url = own.both_url("postgres");
  auto w = writer(url, "a");
  ASSERT_TRUE(w);
  GenXorb x1 = index::gen::gen_xorb(17, 5), x2 = index::gen::gen_xorb(18, 5);
  auto s1 = make_shard({&x1}, 1);
  auto s2 = make_shard({&x2}, 2);
  publish(*w, s1);
  own.wait_standby_caught_up();
  own.stop_primary();
  own.promote();
  // The first call finds its connection gone; the publisher's retry (same
  // shard, idempotent) reaches the new primary.
  auto p = w->publish(*s2.view, s2.hash);
  if (!p) p = w->publish(*s2.view, s2.hash);
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_EQ(p->result, PublishResult::added);
  auto r = reader(own.standby_url("postgres"));
  ASSERT_TRUE(r);
  std::vector<Hash> q = {x1.raw[0], x2.raw[0]};
  auto a = lookup(*r, q);
  EXPECT_EQ(a.of(0).size(), 1u);
  EXPECT_EQ(a.of(1).size(), 1u);
  auto st = r->status(Deadline::in(kDeadline));
  ASSERT_TRUE(st);
  EXPECT_FALSE(st->standby);
  EXPECT_EQ(st->shards, 2u);
}

}  // namespace
}  // namespace dedupd::fleet
