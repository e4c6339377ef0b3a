// The Reader's raw filter against a real PostgreSQL: a miss is asked
// nothing once the filter is complete, every answer is what asking every
// form answers, and a raw publish by any host (this one or another) moves
// the raw generation, so the filter never hides what it brought.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "fleet/fleet.hpp"
#include "fleet/key_filters.hpp"
#include "fleet/key_filters_file.hpp"
#include "fleet/migrations.hpp"
#include "tests/unit/fleet/answer_support.hpp"
#include "tests/unit/fleet/pg_support.hpp"
#include "tests/unit/index/gen.hpp"

// Named: a unity build puts this file beside others with helpers of the
// same names.
namespace dedupd::fleet::raw_filter_test {

using index::gen::GenXorb;
using namespace test;  // the fleet tests' server, publish, lookup and describe

ConnectOptions options(const std::string& url, const std::string& host, bool filters) {
  ConnectOptions o;
  o.url = url;
  o.host_name = host;
  o.retry_after = std::chrono::milliseconds(0);
  o.connect_timeout = kDeadline;
  o.key_filters = filters;
  o.raw_filter = filters;
  return o;
}

class FleetRawFilter : public ::testing::Test {
 protected:
  void SetUp() override { url_ = Cluster::shared().primary_url(Cluster::shared().new_database()); }
  std::unique_ptr<Writer> writer(const std::string& host) {
    auto w = Writer::connect(options(url_, host, true));
    EXPECT_TRUE(w) << (w ? "" : w.error().to_string());
    return w ? std::move(*w) : nullptr;
  }
  std::unique_ptr<Reader> reader(bool filters, std::shared_ptr<KeyFilters> set = nullptr) {
    auto o = options(url_, "r", filters);
    o.key_filters_shared = std::move(set);
    auto r = Reader::connect(o);
    EXPECT_TRUE(r) << (r ? "" : r.error().to_string());
    return r ? std::move(*r) : nullptr;
  }
  // A raw xorb (seed) and a keyed one (seed + 1, under the key
  // hash_of_seed(key_seed)) of 300 chunks, each in a shard of its own.
  struct RawAndKeyed {
    GenXorb raw, keyed;
  };
  static RawAndKeyed publish_raw_and_keyed(Writer& w, std::uint64_t seed, std::uint64_t key_seed) {
    RawAndKeyed x{index::gen::gen_xorb(seed, 300), index::gen::gen_xorb(seed + 1, 300)};
    publish(w, filter_shard({&x.raw}, 1));
    publish(w, filter_shard({&x.keyed}, 2, index::gen::hash_of_seed(key_seed)));
    return x;
  }
  // What asking every form answers.
  std::vector<std::string> every_form(std::span<const Hash> q) {
    auto every = reader(false);
    EXPECT_TRUE(every);
    return every ? describe(lookup(*every, q)) : std::vector<std::string>{};
  }
  static std::vector<Hash> misses(std::uint64_t from, std::uint64_t n) {
    std::vector<Hash> q;
    for (std::uint64_t i = 0; i < n; ++i) q.push_back(index::gen::hash_of_seed(from + i));
    return q;
  }
  std::string url_;
};

TEST_F(FleetRawFilter, AMissIsAskedNothingAndEveryAnswerIsTheSame) {
  auto a = writer("a");
  ASSERT_TRUE(a);
  const auto [raw, keyed] = publish_raw_and_keyed(*a, 1, 501);
  std::vector<Hash> q(raw.raw.begin(), raw.raw.end());
  q.insert(q.end(), keyed.raw.begin(), keyed.raw.end());
  auto m = misses(900000, 1000);
  q.insert(q.end(), m.begin(), m.end());
  const auto want = every_form(q);
  ASSERT_EQ(want.size(), 600u) << "a location for each stored form";

  auto r = reader(true);
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->warm_up(Deadline::in(kDeadline))) << "both filters built";
  EXPECT_EQ(describe(lookup(*r, q)), want);
  const LookupCounters& c = r->last_lookup();
  EXPECT_TRUE(c.raw_filtered);
  EXPECT_EQ(c.filtered_keys, 1u);
  EXPECT_EQ(c.rounds, 1u);
  EXPECT_EQ(c.forms, q.size() * 2);
  // The 300 raw forms stored and the 300 keyed ones, and the rare false
  // positive: without the raw filter every raw form (1,600) is asked.
  EXPECT_GE(c.forms_asked, 600u);
  EXPECT_LT(c.forms_asked, 600u + 50);
}

// Lookups never build the raw filter in their spare time (its CAS blocks
// are most of the fleet's): only warm_up does, as the daemon's keeper.
TEST_F(FleetRawFilter, OnlyWarmUpBuildsIt) {
  auto a = writer("a");
  ASSERT_TRUE(a);
  publish_raw_and_keyed(*a, 41, 701);
  auto set = make_key_filters();
  auto r = reader(true, set);
  ASSERT_TRUE(r);
  auto q = misses(600000, 1000);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(lookup(*r, q).size(), q.size());
  EXPECT_EQ(r->last_lookup().filtered_keys, 1u) << "the key's filter, built in spare time";
  EXPECT_FALSE(r->last_lookup().raw_filtered);
  EXPECT_EQ(set->summary().raw_bits, 0) << "no raw filter built";
  ASSERT_TRUE(r->warm_up(Deadline::in(kDeadline)));
  EXPECT_EQ(lookup(*r, q).size(), q.size());
  EXPECT_TRUE(r->last_lookup().raw_filtered);
  EXPECT_LT(r->last_lookup().forms_asked, 50u) << "a miss asks (nearly) nothing";
}

// The generation moves with a raw publish of this host and of another: the
// lookup after either sees it move, asks every raw form again (a second
// round) and finds what was published; then the filter catches up.
TEST_F(FleetRawFilter, ARawPublishByAnyHostIsNeverHidden) {
  auto a = writer("a"), b = writer("b");
  ASSERT_TRUE(a && b);
  GenXorb first = index::gen::gen_xorb(11, 200);
  publish(*a, filter_shard({&first}, 1));
  auto r = reader(true);
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->warm_up(Deadline::in(kDeadline)));

  int seed = 12;
  for (Writer* w : {a.get(), b.get(), a.get()}) {
    SCOPED_TRACE(seed);
    GenXorb next = index::gen::gen_xorb(std::uint64_t(seed), 200);
    std::vector<Hash> q(next.raw.begin(), next.raw.end());
    auto m = misses(800000 + std::uint64_t(seed) * 1000, 200);
    q.insert(q.end(), m.begin(), m.end());
    ASSERT_EQ(lookup(*r, q).size(), q.size());
    EXPECT_TRUE(r->last_lookup().raw_filtered) << "complete for the generation it saw";
    publish(*w, filter_shard({&next}, std::uint64_t(seed)));
    const auto found = lookup(*r, q);
    EXPECT_EQ(r->last_lookup().rounds, 2u) << "the raw generation moved: asked again with every raw form";
    EXPECT_EQ(describe(found), every_form(q));
    for (std::size_t i = 0; i < next.raw.size(); ++i) ASSERT_EQ(found.of(i).size(), 1u) << i;
    // Brought up to date (here by warm_up; the daemon's keeper does it).
    ASSERT_TRUE(r->warm_up(Deadline::in(kDeadline)));
    EXPECT_EQ(describe(lookup(*r, q)), every_form(q));
    EXPECT_TRUE(r->last_lookup().raw_filtered);
    EXPECT_EQ(r->last_lookup().rounds, 1u);
    ++seed;
  }
}

// A shard held again adds no xorb: the raw generation stays, and the filter
// stays in use.
TEST_F(FleetRawFilter, AShardHeldAgainLeavesTheGenerationAlone) {
  auto a = writer("a"), b = writer("b");
  ASSERT_TRUE(a && b);
  GenXorb x = index::gen::gen_xorb(21, 100);
  auto shard = filter_shard({&x}, 1);
  publish(*a, shard);
  auto r = reader(true);
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->warm_up(Deadline::in(kDeadline)));
  publish(*b, shard);
  std::vector<Hash> q(x.raw.begin(), x.raw.end());
  EXPECT_EQ(describe(lookup(*r, q)), every_form(q));
  EXPECT_TRUE(r->last_lookup().raw_filtered);
  EXPECT_EQ(r->last_lookup().rounds, 1u);
}

// A heartbeat and a writer's connection update their host's row, and
// leave the raw generation alone: under schema 4 each moved it, and on a
// fleet of many hosts the filter was stale about once a second.
TEST_F(FleetRawFilter, AHeartbeatLeavesTheGenerationAlone) {
  auto a = writer("a");
  ASSERT_TRUE(a);
  GenXorb x = index::gen::gen_xorb(41, 100);
  publish(*a, filter_shard({&x}, 1));
  auto r = reader(true);
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->warm_up(Deadline::in(kDeadline)));
  std::vector<Hash> q(x.raw.begin(), x.raw.end());
  auto m = misses(900000, 200);
  q.insert(q.end(), m.begin(), m.end());
  ASSERT_TRUE(a->heartbeat());
  auto c = writer("c");  // a new host's first connection
  ASSERT_TRUE(c && c->heartbeat());
  EXPECT_EQ(describe(lookup(*r, q)), every_form(q));
  EXPECT_TRUE(r->last_lookup().raw_filtered);
  EXPECT_EQ(r->last_lookup().rounds, 1u) << "nothing raw was published: asked once";
  EXPECT_LT(r->last_lookup().forms_asked, x.raw.size() + m.size() / 10) << "the misses were filtered";
}

// A fleet database of schema 4 (fleet-v2, the fixture of c91351c, upgraded
// by the released steps 3 and 4) is upgraded in place to schema 5 and on: the
// raw generation's table comes empty, the raw filter answers every form's
// answers, and a raw publish after the upgrade is never hidden.
TEST_F(FleetRawFilter, ASchema4DatabaseIsUpgradedInPlace) {
  const std::string dir = load_fleet_v2(url_);
  ASSERT_FALSE(dir.empty());
  Admin admin(url_);
  admin.one(schema::migrations()[2].sql + schema::migrations()[3].sql +
            "UPDATE dedupd.schema_version SET version = 4;");
  ASSERT_EQ(admin.one("SELECT version FROM dedupd.schema_version"), "4");
  const std::string chunks = admin.one("SELECT count(*) FROM dedupd.chunk");
  ASSERT_NE(chunks, "0");

  auto m = migrate(options(url_, "unused", true));
  ASSERT_TRUE(m) << m.error().to_string();
  EXPECT_EQ(m->from, 4u);
  EXPECT_EQ(m->to, known_schema_version());
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.raw_publish"), "0");
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.chunk"), chunks);

  // Every chunk of the fixture's xorbs, and misses.
  std::vector<Hash> q = misses(950000, 100);
  auto hashes = admin.one(
      "SELECT string_agg(encode(substring(x.cas_block FROM 48 * (i + 1) + 1 FOR 32), 'hex'), ',') "
      "FROM dedupd.xorb x, generate_series(0, x.chunks - 1) AS i WHERE x.key_id = 0");
  for (std::size_t at = 0; at + 64 <= hashes.size(); at += 65) q.push_back(Hash::parse(hashes.substr(at, 64)).value());
  ASSERT_GT(q.size(), 100u);
  auto r = reader(true);
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->warm_up(Deadline::in(kDeadline)));
  EXPECT_EQ(describe(lookup(*r, q)), every_form(q));
  EXPECT_TRUE(r->last_lookup().raw_filtered);

  auto w = writer("host-e");
  ASSERT_TRUE(w);
  GenXorb x = index::gen::gen_xorb(51, 50);
  publish(*w, filter_shard({&x}, 1));
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.raw_publish"), "1");
  std::vector<Hash> fresh(x.raw.begin(), x.raw.end());
  const auto found = lookup(*r, fresh);
  EXPECT_EQ(r->last_lookup().rounds, 2u) << "the raw generation moved";
  for (std::size_t i = 0; i < fresh.size(); ++i) EXPECT_EQ(found.of(i).size(), 1u) << i;
}

// The raw filter takes at most half the set's budget, thinner when that is
// short, and the keys keep the rest.
// Kept across a restart (fleet/key_filters_file.hpp): a new set that reads
// the file fetches no CAS block of what it holds, only of what was
// published since, and hides nothing of that meanwhile.
TEST_F(FleetRawFilter, AKeptFilterIsListedAgainNotFetchedAgain) {
  auto a = writer("a");
  ASSERT_TRUE(a);
  publish_raw_and_keyed(*a, 51, 801);
  char tmpl[] = "/tmp/dedupd-kept-XXXXXX";
  const std::filesystem::path dir = ::mkdtemp(tmpl), file = dir / "fleet-key-filters";
  {
    auto set = make_key_filters();
    auto r = reader(true, set);
    ASSERT_TRUE(r);
    ASSERT_TRUE(r->warm_up(Deadline::in(kDeadline)));
    EXPECT_EQ(set->entries_fetched(), 600u) << "the raw xorb's and the keyed one's";
    auto saved = save_kept_filters(*set, file);
    ASSERT_TRUE(saved) << saved.error().to_string();
    EXPECT_EQ(saved->filters, 2u);
  }
  auto set = make_key_filters();
  auto loaded = load_kept_filters(*set, file);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(loaded) << loaded.error().to_string();
  EXPECT_EQ(loaded->filters, 2u);
  auto r = reader(true, set);
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->warm_up(Deadline::in(kDeadline)));
  EXPECT_EQ(set->entries_fetched(), 0u) << "listed, not fetched";
  EXPECT_EQ(set->summary().raw_entries, 300u);
  auto q = misses(800000, 1000);
  EXPECT_EQ(lookup(*r, q).size(), q.size());
  EXPECT_TRUE(r->last_lookup().raw_filtered);
  EXPECT_EQ(r->last_lookup().filtered_keys, 1u);
  EXPECT_LT(r->last_lookup().forms_asked, 50u) << "a miss asks (nearly) nothing";

  GenXorb since = index::gen::gen_xorb(61, 200);
  publish(*a, filter_shard({&since}, 3));
  std::vector<Hash> hits(since.raw.begin(), since.raw.end());
  EXPECT_EQ(describe(lookup(*r, hits)), every_form(hits)) << "what came since is never hidden";
  ASSERT_TRUE(r->warm_up(Deadline::in(kDeadline)));
  EXPECT_EQ(set->entries_fetched(), 200u) << "only the xorb published since";
  EXPECT_EQ(set->summary().raw_entries, 500u);
}

TEST_F(FleetRawFilter, TakesAtMostHalfTheBudget) {
  auto a = writer("a");
  ASSERT_TRUE(a);
  const auto [raw, keyed] = publish_raw_and_keyed(*a, 31, 601);
  // A filter sized for room_for(300) entries takes about 129 KiB at 16
  // bits: the key's is built first and gets them; the raw filter gets what
  // is left of 200 KiB, within its half, at fewer bits.
  constexpr std::int64_t kBudget = 200 << 10;
  auto set = make_key_filters(kBudget);
  auto r = reader(true, set);
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->warm_up(Deadline::in(kDeadline)));
  const auto s = set->summary();
  EXPECT_EQ(s.raw_entries, 300u);
  EXPECT_GT(s.raw_bits, 0);
  EXPECT_LT(s.raw_bits, 16) << "thinner, within its half";
  EXPECT_EQ(s.complete, 1u) << "the key has its filter too";
  EXPECT_LE(s.bytes, kBudget);
  std::vector<Hash> q(raw.raw.begin(), raw.raw.end());
  q.insert(q.end(), keyed.raw.begin(), keyed.raw.end());
  auto m = misses(700000, 500);
  q.insert(q.end(), m.begin(), m.end());
  EXPECT_EQ(describe(lookup(*r, q)), every_form(q));
  EXPECT_TRUE(r->last_lookup().raw_filtered);
}

}  // namespace dedupd::fleet::raw_filter_test
