// The Reader's xorb cache (fleet/xorb_cache.hpp) against a real PostgreSQL:
// cached answers are the answers asked in full, holders are read again past
// their bound, a new connection or a restored database starts it again, the
// budget holds, Readers sharing one cache fetch a block once, hits add up
// over lookups, and the full stored hash still decides every hit.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <thread>

#include "fleet/fleet.hpp"
#include "fleet/xorb_cache.hpp"
#include "tests/unit/fleet/answer_support.hpp"
#include "tests/unit/fleet/pg_support.hpp"
#include "tests/unit/index/gen.hpp"

// Named, not anonymous: a unity build puts this file beside the other fleet
// tests, whose helpers (fleet_fixture.hpp) have the same names.
namespace dedupd::fleet::xorb_cache_test {

using index::gen::GenXorb;
using index::gen::OwnedShard;
using test::Admin;
using test::Cluster;
using test::describe;
using test::kDeadline;
using test::lookup;
using test::publish;

constexpr auto kHour = std::chrono::milliseconds(3'600'000);

ConnectOptions options(const std::string& url, const std::string& host = "reader") {
  ConnectOptions o;
  o.url = url;
  o.host_name = host;
  o.retry_after = std::chrono::milliseconds(0);
  o.connect_timeout = kDeadline;
  return o;
}

OwnedShard make_shard(std::vector<const GenXorb*> xorbs, std::uint64_t created) {
  index::gen::ShardSpec spec;
  spec.xorbs = std::move(xorbs);
  spec.created = created;
  return index::gen::own(index::gen::build_shard(spec));
}

std::vector<std::string> holders_of_first(const ChunkAnswers& a) {
  std::vector<std::string> out;
  if (a.size() == 0 || a.of(0).empty()) return out;
  for (const auto& sh : a.shards(a.of(0)[0]))
    for (const auto& h : sh.holders) out.push_back(h);
  return out;
}

class FleetXorbCache : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = Cluster::shared().new_database();
    url_ = Cluster::shared().primary_url(db_);
    auto w = Writer::connect(options(url_, "host-a"));
    ASSERT_TRUE(w) << w.error().to_string();
    writer_ = std::move(*w);
  }
  std::unique_ptr<Reader> reader(ConnectOptions o) {
    auto r = Reader::connect(o);
    EXPECT_TRUE(r) << (r ? "" : r.error().to_string());
    return r ? std::move(*r) : nullptr;
  }
  std::unique_ptr<Reader> reader() { return reader(options(url_)); }
  // Holders kept an hour: what the cache holds is used, whatever a test's pace.
  ConnectOptions keeping_holders() const {
    auto o = options(url_);
    o.holders_max_age = kHour;
    return o;
  }
  // A Reader that keeps nothing: every hit asks for its xorb and entry.
  std::unique_ptr<Reader> uncached() {
    auto o = options(url_);
    o.xorb_cache = std::make_shared<XorbCache>(0);
    return reader(o);
  }
  std::string db_, url_;
  std::unique_ptr<Writer> writer_;
};

// A hit's xorb, holders and entry come from the cache on the next lookup;
// a xorb hit often in one lookup comes whole, one hit rarely is sliced; the
// answers are those of a Reader that keeps nothing.
TEST_F(FleetXorbCache, CachedAnswersAreTheAnswersAskedInFull) {
  GenXorb big = index::gen::gen_xorb(31, 200), small = index::gen::gen_xorb(32, 3);
  publish(*writer_, make_shard({&big, &small}, 1));
  auto r = reader(keeping_holders());
  auto bare = uncached();
  ASSERT_TRUE(r && bare);

  // One hit of a 200-chunk block (9,648 bytes): sliced, not fetched whole.
  std::vector<Hash> one = {big.raw[17]};
  auto a = lookup(*r, one);
  EXPECT_EQ(describe(a), describe(lookup(*bare, one)));
  EXPECT_EQ(r->last_lookup().fills, 1u);
  EXPECT_EQ(r->last_lookup().entries_sliced, 1u);
  EXPECT_EQ(r->last_lookup().blocks_read, 0u);

  // Every chunk: the block comes whole (the small one too: 1 hit per 192 bytes).
  std::vector<Hash> all(big.raw.begin(), big.raw.end());
  all.insert(all.end(), small.raw.begin(), small.raw.end());
  a = lookup(*r, all);
  EXPECT_EQ(a.locations.size(), all.size());
  EXPECT_EQ(describe(a), describe(lookup(*bare, all)));
  EXPECT_EQ(r->last_lookup().blocks_read, 2u);
  EXPECT_EQ(r->last_lookup().entries_sliced, 0u);
  EXPECT_EQ(r->cached_xorbs(), 2u);

  // Now nothing but the probe.
  a = lookup(*r, all);
  EXPECT_EQ(r->last_lookup().fills, 0u);
  EXPECT_EQ(describe(a), describe(lookup(*bare, all)));
  a = lookup(*r, one);
  EXPECT_EQ(r->last_lookup().fills, 0u);
  EXPECT_EQ(describe(a), describe(lookup(*bare, one)));
  // The uncached Reader asked every time.
  EXPECT_EQ(bare->last_lookup().fills, 1u);
  EXPECT_EQ(bare->cached_xorbs(), 0u);
}

// Holders are kept no longer than holders_max_age: within it a changed
// holder list may still show the old one, past it never; fresh_holders
// reads them with the lookup.
TEST_F(FleetXorbCache, HoldersAreReadAgainOnceOlderThanTheirBound) {
  auto b = Writer::connect(options(url_, "host-b"));
  ASSERT_TRUE(b) << b.error().to_string();
  GenXorb x = index::gen::gen_xorb(33, 5);
  auto s = make_shard({&x}, 1);
  publish(*writer_, s);
  publish(**b, s);
  std::vector<Hash> q = {x.raw[2]};
  auto o = keeping_holders();
  auto kept = reader(o);
  o.holders_max_age = std::chrono::milliseconds(50);
  auto brief = reader(o);
  ASSERT_TRUE(kept && brief);
  EXPECT_EQ(holders_of_first(lookup(*kept, q)), (std::vector<std::string>{"host-a", "host-b"}));
  EXPECT_EQ(holders_of_first(lookup(*brief, q)), (std::vector<std::string>{"host-a", "host-b"}));

  ASSERT_TRUE((*b)->drop_hold(s.hash));
  // Within the hour: the list read an instant ago.
  EXPECT_EQ(holders_of_first(lookup(*kept, q)), (std::vector<std::string>{"host-a", "host-b"}));
  EXPECT_EQ(kept->last_lookup().fills, 0u);
  // Asked fresh: as the database has them.
  EXPECT_EQ(holders_of_first(lookup(*kept, q, true)), std::vector<std::string>{"host-a"});
  EXPECT_EQ(kept->last_lookup().holders_read, 1u);
  // Past a 50 ms bound: read again.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(holders_of_first(lookup(*brief, q)), std::vector<std::string>{"host-a"});
  EXPECT_EQ(brief->last_lookup().holders_read, 1u);
  EXPECT_EQ(brief->last_lookup().blocks_read + brief->last_lookup().entries_sliced, 0u) << "the entry was cached";
}

// Row ids are handed out again here as a database restored from an older
// dump hands them out (the xorb identity restarted): after a new connection
// the Reader answers from the database, never from what it kept of the
// xorb that had the id before.
TEST_F(FleetXorbCache, ANewConnectionStartsTheCacheAgain) {
  GenXorb x1 = index::gen::gen_xorb(34, 40), x2 = index::gen::gen_xorb(35, 40);
  auto s1 = make_shard({&x1}, 1), s2 = make_shard({&x2}, 2);
  publish(*writer_, s1);
  Admin admin(url_);
  const std::string id1 = admin.one("SELECT id FROM dedupd.xorb");
  auto r = reader(keeping_holders());
  ASSERT_TRUE(r);
  std::vector<Hash> q1(x1.raw.begin(), x1.raw.end()), q2(x2.raw.begin(), x2.raw.end());
  EXPECT_EQ(lookup(*r, q1).locations.size(), q1.size());
  ASSERT_EQ(r->cached_xorbs(), 1u);

  ASSERT_TRUE(writer_->drop_hold(s1.hash));
  admin.one("ALTER TABLE dedupd.xorb ALTER COLUMN id RESTART WITH " + id1);
  publish(*writer_, s2);
  ASSERT_EQ(admin.one("SELECT id FROM dedupd.xorb"), id1) << "the id was not handed out again";
  // The Reader's connection goes (a failover, a restart of the server).
  admin.one(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() "
      "AND pid <> pg_backend_pid()");
  ChunkAnswers a;
  for (int i = 0; i < 3; ++i)  // the first call may find the connection gone
    if (r->lookup_chunks(q2, a, Deadline::in(kDeadline))) break;
  ASSERT_EQ(a.locations.size(), q2.size());
  EXPECT_EQ(a.of(0)[0].xorb, x2.hash);
  EXPECT_EQ(lookup(*r, q1).locations.size(), 0u);
}

// pg_restore --clean of an older dump while the Reader stays connected:
// the tables are made anew (the lookup's epoch changes), the cache starts
// again, and an id the restored database hands out again is answered as
// the database has it.
TEST_F(FleetXorbCache, ADatabaseRestoredUnderALiveConnectionIsNotAnsweredFromTheCache) {
  GenXorb x1 = index::gen::gen_xorb(36, 30), x2 = index::gen::gen_xorb(37, 30), x3 = index::gen::gen_xorb(38, 30);
  publish(*writer_, make_shard({&x1}, 1));
  const auto dump = std::filesystem::temp_directory_path() / (db_ + ".dump");
  ASSERT_EQ(std::system(("pg_dump -Fc -d '" + url_ + "' -f '" + dump.string() + "'").c_str()), 0);
  publish(*writer_, make_shard({&x2}, 2));
  auto r = reader(keeping_holders());
  ASSERT_TRUE(r);
  std::vector<Hash> q2(x2.raw.begin(), x2.raw.end()), q3(x3.raw.begin(), x3.raw.end());
  EXPECT_EQ(lookup(*r, q2).locations.size(), q2.size());
  Admin admin(url_);
  const std::string id2 = admin.one("SELECT max(id) FROM dedupd.xorb");

  ASSERT_EQ(
      std::system(
          ("pg_restore --clean --if-exists --single-transaction -d '" + url_ + "' '" + dump.string() + "'").c_str()),
      0);
  std::filesystem::remove(dump);
  auto w = Writer::connect(options(url_, "host-a"));
  ASSERT_TRUE(w) << w.error().to_string();
  publish(**w, make_shard({&x3}, 3));
  ASSERT_EQ(admin.one("SELECT max(id) FROM dedupd.xorb"), id2) << "the id was not handed out again";
  auto a = lookup(*r, q3);
  ASSERT_EQ(a.locations.size(), q3.size());
  EXPECT_EQ(a.of(0)[0].xorb, x3.hash);
  EXPECT_EQ(holders_of_first(a), std::vector<std::string>{"host-a"});
  EXPECT_EQ(lookup(*r, q2).locations.size(), 0u);
}

// A budget that holds one block: the least recently used goes, what is
// kept stays within the budget, and answers do not change.
TEST_F(FleetXorbCache, ATightBudgetDropsTheLeastRecentlyUsedAndAnswersTheSame) {
  GenXorb x1 = index::gen::gen_xorb(39, 200), x2 = index::gen::gen_xorb(40, 200);
  publish(*writer_, make_shard({&x1, &x2}, 1));
  const std::int64_t budget_bytes = 14'000;  // one 9,648-byte block and a few entries
  auto cache = std::make_shared<XorbCache>(budget_bytes);
  auto o = options(url_);
  o.xorb_cache = cache;
  auto r = reader(o);
  auto bare = uncached();
  ASSERT_TRUE(r && bare);
  std::vector<Hash> q1(x1.raw.begin(), x1.raw.end()), q2(x2.raw.begin(), x2.raw.end());
  for (int round = 0; round < 3; ++round)
    for (const auto* q : {&q1, &q2}) {
      auto a = lookup(*r, *q);
      EXPECT_EQ(a.locations.size(), q->size());
      EXPECT_EQ(describe(a), describe(lookup(*bare, *q)));
      EXPECT_LE(cache->bytes(), budget_bytes);
    }
  EXPECT_GE(r->cache_evictions(), 1u);
}

// Hits spread over more xorbs than the cache holds: one fill brings whole
// blocks up to the budget and slices the rest, never more than it could keep.
TEST_F(FleetXorbCache, OneFillBringsNoMoreWholeBlocksThanTheBudgetHolds) {
  std::vector<GenXorb> xs;
  for (int i = 0; i < 6; ++i) xs.push_back(index::gen::gen_xorb(50 + i, 200));
  publish(*writer_, make_shard({&xs[0], &xs[1], &xs[2], &xs[3], &xs[4], &xs[5]}, 1));
  const std::int64_t budget_bytes = 2 * 9'648 + 1'000;  // two 200-chunk blocks
  auto o = options(url_);
  o.xorb_cache = std::make_shared<XorbCache>(budget_bytes);
  auto r = reader(o);
  auto bare = uncached();
  ASSERT_TRUE(r && bare);
  std::vector<Hash> every;
  for (const auto& x : xs) every.insert(every.end(), x.raw.begin(), x.raw.end());
  auto a = lookup(*r, every);
  EXPECT_EQ(a.locations.size(), every.size());
  EXPECT_EQ(describe(a), describe(lookup(*bare, every)));
  EXPECT_EQ(r->last_lookup().fills, 1u);
  EXPECT_GE(r->last_lookup().blocks_read, 1u);
  EXPECT_LE(r->last_lookup().blocks_read, 2u) << "whole blocks past the budget";
  EXPECT_EQ(r->last_lookup().entries_sliced, (6 - r->last_lookup().blocks_read) * 200u);
}

// Two Readers of one cache (the daemon's pool): a block one fetched whole
// answers the other's lookup with no statement beyond the probe, and a
// Reader reading another database (another era) finds none of it.
TEST_F(FleetXorbCache, ReadersSharingACacheFetchABlockOnce) {
  GenXorb x = index::gen::gen_xorb(42, 200);
  publish(*writer_, make_shard({&x}, 1));
  auto cache = std::make_shared<XorbCache>(kDefaultXorbCacheBytes);
  auto o = keeping_holders();
  o.xorb_cache = cache;
  auto first = reader(o), second = reader(o);
  auto bare = uncached();
  ASSERT_TRUE(first && second && bare);
  std::vector<Hash> all(x.raw.begin(), x.raw.end());
  auto a = lookup(*first, all);
  EXPECT_EQ(first->last_lookup().blocks_read, 1u);
  auto b = lookup(*second, all);
  EXPECT_EQ(second->last_lookup().fills, 0u) << "the second Reader asked for what the first had fetched";
  EXPECT_EQ(describe(b), describe(a));
  EXPECT_EQ(describe(b), describe(lookup(*bare, all)));

  // Another database, the same row ids: nothing of the other is used.
  const std::string other_db = Cluster::shared().new_database();
  const std::string other_url = Cluster::shared().primary_url(other_db);
  auto w = Writer::connect(options(other_url, "host-a"));
  ASSERT_TRUE(w) << w.error().to_string();
  GenXorb y = index::gen::gen_xorb(43, 200);
  publish(**w, make_shard({&y}, 1));
  auto elsewhere_options = options(other_url);
  elsewhere_options.xorb_cache = cache;
  auto elsewhere = reader(elsewhere_options);
  ASSERT_TRUE(elsewhere);
  std::vector<Hash> ys(y.raw.begin(), y.raw.end());
  auto c = lookup(*elsewhere, ys);
  EXPECT_EQ(elsewhere->last_lookup().fills, 1u);
  ASSERT_EQ(c.locations.size(), ys.size());
  EXPECT_EQ(c.of(0)[0].xorb, y.hash);
  EXPECT_EQ(lookup(*elsewhere, all).locations.size(), 0u);
}

// A block hit once per lookup is sliced until the hits of several lookups
// add up to one per 4,096 bytes of it; then it comes whole, and later hits
// ask nothing more. While it is sliced, its meta and holders come from the
// cache (they are read once), and the answers are those asked in full.
TEST_F(FleetXorbCache, HitsOfSeveralLookupsAddUpToAWholeBlock) {
  GenXorb x = index::gen::gen_xorb(44, 200);  // a 9,648-byte block: 3 hits
  publish(*writer_, make_shard({&x}, 1));
  auto r = reader(keeping_holders());
  auto bare = uncached();
  ASSERT_TRUE(r && bare);
  for (std::size_t i = 0; i < 2; ++i) {
    const std::vector<Hash> q = {x.raw[10 + i]};
    auto a = lookup(*r, q);
    ASSERT_EQ(a.locations.size(), 1u);
    EXPECT_EQ(describe(a), describe(lookup(*bare, q))) << "lookup " << i;
    EXPECT_EQ(r->last_lookup().entries_sliced, 1u) << "lookup " << i;
    EXPECT_EQ(r->last_lookup().blocks_read, 0u) << "lookup " << i;
    EXPECT_EQ(r->last_lookup().xorbs_read, i == 0 ? 1u : 0u) << "lookup " << i;
  }
  auto a = lookup(*r, std::vector<Hash>{x.raw[12]});
  ASSERT_EQ(a.locations.size(), 1u);
  EXPECT_EQ(a.of(0)[0].chunk_index, 12u);
  EXPECT_EQ(r->last_lookup().blocks_read, 1u);
  EXPECT_EQ(r->last_lookup().entries_sliced, 0u);
  lookup(*r, std::vector<Hash>{x.raw[13]});
  EXPECT_EQ(r->last_lookup().fills, 0u);
}

// The prefix only picks candidates: a query sharing a stored hash's first 8
// bytes and differing after them is not found, whether the entry comes from
// a cached block or is sliced out.
TEST_F(FleetXorbCache, APrefixCollisionWithAnotherFullHashIsNotFound) {
  GenXorb x = index::gen::gen_xorb(41, 200);
  publish(*writer_, make_shard({&x}, 1));
  Hash twin = x.raw[7];
  twin.bytes[20] ^= 0x5a;
  std::vector<Hash> q = {twin, x.raw[7]};
  auto bare = uncached();
  auto cached = reader();
  ASSERT_TRUE(bare && cached);
  std::vector<Hash> all(x.raw.begin(), x.raw.end());
  lookup(*cached, all);  // the block is now cached whole
  ASSERT_EQ(cached->cached_xorbs(), 1u);
  for (Reader* r : {bare.get(), cached.get()}) {
    auto a = lookup(*r, q);
    EXPECT_EQ(a.of(0).size(), 0u) << "a prefix collision answered as a hit";
    ASSERT_EQ(a.of(1).size(), 1u);
    EXPECT_EQ(a.of(1)[0].chunk_index, 7u);
  }
  EXPECT_EQ(bare->last_lookup().entries_sliced, 1u);
  EXPECT_EQ(cached->last_lookup().fills, 0u);

  // From its second lookup the uncached Reader's probe reads the hits'
  // entries from their rows (schema 6), which hold the stored hash's bytes
  // 8-11: a twin that differs there is not found either.
  Hash near = x.raw[7];
  near.bytes[9] ^= 0x01;
  std::vector<Hash> q2 = {near, x.raw[7]};
  auto a = lookup(*bare, q2);
  EXPECT_TRUE(bare->last_lookup().probed_entries);
  EXPECT_EQ(a.of(0).size(), 0u) << "a prefix collision answered as a hit";
  ASSERT_EQ(a.of(1).size(), 1u);
  EXPECT_EQ(a.of(1)[0].chunk_index, 7u);
}

}  // namespace dedupd::fleet::xorb_cache_test
