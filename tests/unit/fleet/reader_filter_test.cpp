// The Reader's key filters against a real PostgreSQL: with them a lookup
// asks far fewer forms and answers exactly what asking every form answers,
// and a filter made stale by a publish under its key never hides an entry.
#include <gtest/gtest.h>

#include "fleet/fleet.hpp"
#include "fleet/key_filter.hpp"
#include "fleet/key_filters.hpp"
#include "tests/unit/fleet/answer_support.hpp"
#include "tests/unit/fleet/pg_support.hpp"
#include "tests/unit/index/gen.hpp"

// Named, not anonymous: a unity build puts this file beside the other fleet
// tests, whose helpers (fleet_fixture.hpp) have the same names.
namespace dedupd::fleet::key_filter_test {

using index::gen::GenXorb;
using test::Cluster;
using test::describe;
using test::filter_shard;
using test::kDeadline;
using test::lookup;
using test::publish;

ConnectOptions options(const std::string& url, bool key_filters) {
  ConnectOptions o;
  o.url = url;
  o.host_name = "a";
  o.retry_after = std::chrono::milliseconds(0);
  o.connect_timeout = kDeadline;
  o.key_filters = key_filters;
  o.raw_filter = false;  // these count the keyed forms asked (raw_filter_test.cpp: the raw forms)
  return o;
}

class FleetKeyFilter : public ::testing::Test {
 protected:
  void SetUp() override {
    url_ = Cluster::shared().primary_url(Cluster::shared().new_database());
    auto w = Writer::connect(options(url_, true));
    ASSERT_TRUE(w) << w.error().to_string();
    writer_ = std::move(*w);
  }
  std::unique_ptr<Reader> reader(bool key_filters) {
    auto r = Reader::connect(options(url_, key_filters));
    EXPECT_TRUE(r) << (r ? "" : r.error().to_string());
    return r ? std::move(*r) : nullptr;
  }
  // Two keys, a xorb of 300 chunks under each (seeds `xorb` and `xorb` + 1,
  // keys `key` and `key` + 1), and a query of their raw hashes and `misses`
  // hashes the fleet lacks, with what asking every form answers.
  struct Asked {
    std::vector<Hash> q;
    std::vector<std::string> want;
  };
  Asked two_keys_of_300(std::uint64_t xorb, std::uint64_t key, std::uint64_t misses) {
    GenXorb a = index::gen::gen_xorb(xorb, 300), b = index::gen::gen_xorb(xorb + 1, 300);
    publish(*writer_, filter_shard({&a}, 1, index::gen::hash_of_seed(key)));
    publish(*writer_, filter_shard({&b}, 2, index::gen::hash_of_seed(key + 1)));
    Asked out;
    out.q.assign(a.raw.begin(), a.raw.end());
    out.q.insert(out.q.end(), b.raw.begin(), b.raw.end());
    for (std::uint64_t i = 0; i < misses; ++i) out.q.push_back(index::gen::hash_of_seed(900000 + key * 100 + i));
    auto every = reader(false);
    EXPECT_TRUE(every);
    if (every) out.want = describe(lookup(*every, out.q));
    return out;
  }
  std::string url_;
  std::unique_ptr<Writer> writer_;
};

TEST_F(FleetKeyFilter, AnswersWhatAskingEveryFormAnswersWithFarFewerForms) {
  GenXorb raw = index::gen::gen_xorb(1, 300), a = index::gen::gen_xorb(2, 300), b = index::gen::gen_xorb(3, 300);
  Key k1 = index::gen::hash_of_seed(501), k2 = index::gen::hash_of_seed(502);
  publish(*writer_, filter_shard({&raw}, 1));
  publish(*writer_, filter_shard({&a}, 2, k1));
  publish(*writer_, filter_shard({&b}, 3, k2));
  publish(*writer_, filter_shard({&a}, 4));  // the same xorb raw too: two forms
  std::vector<Hash> q;
  for (std::size_t i = 0; i < 300; i += 3) q.insert(q.end(), {raw.raw[i], a.raw[i], b.raw[i]});
  for (std::uint64_t i = 0; i < 700; ++i) q.push_back(index::gen::hash_of_seed(900000 + i));  // misses

  auto every = reader(false), filtered = reader(true);
  ASSERT_TRUE(every && filtered);
  auto want = lookup(*every, q);
  EXPECT_EQ(every->last_lookup().forms_asked, every->last_lookup().forms);
  EXPECT_EQ(every->last_lookup().filtered_keys, 0u);
  ASSERT_EQ(want.size(), q.size());
  EXPECT_EQ(want.of(1).size(), 2u);  // a.raw[0]: raw and under k1
  EXPECT_EQ(want.of(2).size(), 1u);
  EXPECT_EQ(want.of(310).size(), 0u);

  // The first lookup builds the filters in its spare time; the second uses them.
  EXPECT_EQ(describe(lookup(*filtered, q)), describe(want));
  EXPECT_EQ(filtered->last_lookup().filtered_keys, 0u);
  EXPECT_EQ(describe(lookup(*filtered, q)), describe(want));
  const LookupCounters& c = filtered->last_lookup();
  EXPECT_EQ(c.filtered_keys, 2u);
  EXPECT_EQ(c.rounds, 1u);
  EXPECT_EQ(c.forms, q.size() * 3);
  // Each raw form, plus the keyed forms that are stored (200) and the rare
  // false positive: far under the 3 forms per query asked without filters.
  EXPECT_GE(c.forms_asked, q.size() + 200);
  EXPECT_LT(c.forms_asked, q.size() + 200 + 50);
}

// A set of filters holds at most its budget: a key whose filter does not
// fit even at its thinnest is asked in every form, with the same answers.
// Readers sharing the set share its filters: a second one neither builds
// nor holds another.
TEST_F(FleetKeyFilter, AFilterOverTheBudgetIsNotBuiltAndTheKeyIsAskedInEveryForm) {
  const auto [q, want] = two_keys_of_300(40, 701, 400);

  // Room for one key's filter (300 entries and room to grow, at 16 bits),
  // and half the thinnest of another.
  const std::size_t sized = KeyFilters::room_for(300);
  const auto one = std::int64_t(KeyFilter::bytes_for(sized));
  const auto left = std::int64_t(KeyFilter::bytes_for(sized, KeyFilter::kMinBitsPerEntry)) / 2;
  ConnectOptions o = options(url_, true);
  o.key_filters_shared = make_key_filters(one + left);
  auto r = Reader::connect(o);
  ASSERT_TRUE(r) << r.error().to_string();
  for (int round = 0; round < 3; ++round) EXPECT_EQ(describe(lookup(**r, q)), want) << round;
  EXPECT_EQ((*r)->last_lookup().filtered_keys, 1u);
  EXPECT_EQ(o.key_filters_shared->budget_left(), left);
  const auto fetched = o.key_filters_shared->entries_fetched();
  EXPECT_EQ(fetched, 300u);
  // Over the budget is as complete as that key gets: not a timeout.
  EXPECT_TRUE((*r)->warm_up(Deadline::in(kDeadline)));

  auto second = Reader::connect(o);
  ASSERT_TRUE(second) << second.error().to_string();
  for (int round = 0; round < 2; ++round) EXPECT_EQ(describe(lookup(**second, q)), want) << round;
  EXPECT_EQ((*second)->last_lookup().filtered_keys, 1u);
  EXPECT_EQ(o.key_filters_shared->budget_left(), left) << "one filter, however many Readers use it";
  EXPECT_EQ(o.key_filters_shared->entries_fetched(), fetched) << "the second Reader fetched no CAS block";

  // A Reader of its own set holds its own budget and builds its own.
  auto alone = Reader::connect(options(url_, true));
  ASSERT_TRUE(alone) << alone.error().to_string();
  for (int round = 0; round < 2; ++round) EXPECT_EQ(describe(lookup(**alone, q)), want) << round;
  EXPECT_EQ((*alone)->last_lookup().filtered_keys, 2u);
}

// A key whose filter does not fit at 16 bits an entry gets a thinner one
// from what is left (more false positives, so more keyed forms asked), not
// none; the answers are the same.
TEST_F(FleetKeyFilter, AKeyShortOfBudgetGetsAThinnerFilterNotNone) {
  const auto [q, want] = two_keys_of_300(50, 801, 4'000);

  // One filter at 16 bits an entry, the other at 8.
  const std::size_t sized = KeyFilters::room_for(300);
  const auto full = std::int64_t(KeyFilter::bytes_for(sized)), thin = std::int64_t(KeyFilter::bytes_for(sized, 8));
  ASSERT_LT(thin, full);
  ConnectOptions o = options(url_, true);
  o.key_filters_shared = make_key_filters(full + thin);
  auto r = Reader::connect(o);
  ASSERT_TRUE(r) << r.error().to_string();
  ASSERT_TRUE((*r)->warm_up(Deadline::in(kDeadline)));
  EXPECT_EQ(o.key_filters_shared->budget_left(), 0);
  EXPECT_EQ(describe(lookup(**r, q)), want);
  const LookupCounters& c = (*r)->last_lookup();
  EXPECT_EQ(c.filtered_keys, 2u);
  // The raw forms, the 600 keyed forms stored, and the false positives of
  // 8,600 keyed forms not stored: a few % in the thin filter, far from all.
  EXPECT_GE(c.forms_asked, q.size() + 600);
  EXPECT_LT(c.forms_asked, q.size() + 600 + 400);
}

// A pool's new connection is ready at once: the filters its siblings built
// are complete for the generation it sees, and it filters from its first
// lookup without fetching a CAS block. A publish under the key moves the
// generation for all of them: one brings the filter up to date, every
// Reader uses the new one, and none hides what was published.
TEST_F(FleetKeyFilter, ReadersSharingFiltersBuildEachOnce) {
  GenXorb x = index::gen::gen_xorb(50, 200), y = index::gen::gen_xorb(51, 200);
  Key k = index::gen::hash_of_seed(1001);
  publish(*writer_, filter_shard({&x}, 1, k));
  std::vector<Hash> q(x.raw.begin(), x.raw.end());
  q.insert(q.end(), y.raw.begin(), y.raw.end());
  ConnectOptions o = options(url_, true);
  o.key_filters_shared = make_key_filters();
  auto first = Reader::lazy(o);
  ASSERT_TRUE(first->warm_up(Deadline::in(kDeadline)));
  EXPECT_EQ(o.key_filters_shared->entries_fetched(), 200u);

  auto second = Reader::lazy(o);
  ASSERT_TRUE(second->warm_up(Deadline::in(kDeadline)));
  EXPECT_EQ(o.key_filters_shared->entries_fetched(), 200u);
  auto a = lookup(*second, q);
  EXPECT_EQ(second->last_lookup().filtered_keys, 1u);
  EXPECT_EQ(second->last_lookup().rounds, 1u);
  for (std::size_t i = 0; i < q.size(); ++i) EXPECT_EQ(a.of(i).size(), i < 200 ? 1u : 0u) << i;

  publish(*writer_, filter_shard({&y}, 2, k));
  auto b = lookup(*first, q);  // sees the new generation: asked again in full, then steps
  for (std::size_t i = 0; i < q.size(); ++i) ASSERT_EQ(b.of(i).size(), 1u) << i;
  auto c = lookup(*second, q);
  for (std::size_t i = 0; i < q.size(); ++i) ASSERT_EQ(c.of(i).size(), 1u) << i;
  lookup(*first, q);
  lookup(*second, q);
  EXPECT_EQ(first->last_lookup().filtered_keys, 1u);
  EXPECT_EQ(second->last_lookup().filtered_keys, 1u);
  EXPECT_EQ(second->last_lookup().rounds, 1u);
  EXPECT_EQ(o.key_filters_shared->entries_fetched(), 400u) << "only the new xorb was fetched, once";
}

TEST_F(FleetKeyFilter, AStaleFilterNeverHidesAnEntry) {
  GenXorb first = index::gen::gen_xorb(10, 200), later = index::gen::gen_xorb(11, 200);
  Key k = index::gen::hash_of_seed(601);
  publish(*writer_, filter_shard({&first}, 1, k));
  auto r = reader(true);
  ASSERT_TRUE(r);
  std::vector<Hash> q(first.raw.begin(), first.raw.end());
  q.insert(q.end(), later.raw.begin(), later.raw.end());
  lookup(*r, q);  // builds the filter of k
  auto before = lookup(*r, q);
  ASSERT_EQ(r->last_lookup().filtered_keys, 1u);
  for (std::size_t i = 0; i < 200; ++i) EXPECT_EQ(before.of(i).size(), 1u) << i;
  for (std::size_t i = 200; i < 400; ++i) EXPECT_EQ(before.of(i).size(), 0u) << i;

  // Published under k after the filter was built: the filter does not hold
  // these, and the answer's generation of k says so: asked again, found.
  publish(*writer_, filter_shard({&later}, 2, k));
  auto after = lookup(*r, q);
  EXPECT_EQ(r->last_lookup().rounds, 2u);
  for (std::size_t i = 0; i < 400; ++i) {
    ASSERT_EQ(after.of(i).size(), 1u) << i;
    EXPECT_TRUE(after.of(i)[0].keyed);
    EXPECT_EQ(after.of(i)[0].xorb, i < 200 ? first.hash : later.hash);
  }
  // That lookup brought the filter up to date: one round, filtered, all found.
  auto again = lookup(*r, q);
  EXPECT_EQ(r->last_lookup().rounds, 1u);
  EXPECT_EQ(r->last_lookup().filtered_keys, 1u);
  EXPECT_EQ(describe(again), describe(after));

  // A shard leaving moves the generation too; what is left is still found.
  auto dropped = writer_->drop_hold(filter_shard({&first}, 1, k).hash);
  ASSERT_TRUE(dropped && *dropped);
  auto left = lookup(*r, q);
  for (std::size_t i = 0; i < 200; ++i) EXPECT_EQ(left.of(i).size(), 0u) << i;
  for (std::size_t i = 200; i < 400; ++i) EXPECT_EQ(left.of(i).size(), 1u) << i;
}

TEST_F(FleetKeyFilter, AKeyFirstSeenInAnAnswerIsAskedInFull) {
  GenXorb x = index::gen::gen_xorb(20, 50);
  Key k1 = index::gen::hash_of_seed(701), k2 = index::gen::hash_of_seed(702);
  publish(*writer_, filter_shard({&x}, 1, k1));
  auto r = reader(true);
  ASSERT_TRUE(r);
  std::vector<Hash> q(x.raw.begin(), x.raw.end());
  lookup(*r, q);
  lookup(*r, q);
  ASSERT_EQ(r->last_lookup().filtered_keys, 1u);
  // The same xorb under a new key: a filter of k1 cannot say anything of k2.
  publish(*writer_, filter_shard({&x}, 2, k2));
  auto a = lookup(*r, q);
  for (std::size_t i = 0; i < q.size(); ++i) ASSERT_EQ(a.of(i).size(), 2u) << i;
}

TEST_F(FleetKeyFilter, AWarmedUpReaderFiltersFromItsFirstLookup) {
  GenXorb x = index::gen::gen_xorb(40, 100), y = index::gen::gen_xorb(41, 100);
  Key k1 = index::gen::hash_of_seed(901), k2 = index::gen::hash_of_seed(902);
  publish(*writer_, filter_shard({&x}, 1, k1));
  publish(*writer_, filter_shard({&y}, 2, k2));
  std::vector<Hash> q(x.raw.begin(), x.raw.end());
  q.insert(q.end(), y.raw.begin(), y.raw.end());
  auto every = reader(false);
  ASSERT_TRUE(every);
  auto want = lookup(*every, q);

  auto r = Reader::lazy(options(url_, true));
  auto warm = r->warm_up(Deadline::in(kDeadline));
  ASSERT_TRUE(warm) << warm.error().to_string();
  EXPECT_EQ(describe(lookup(*r, q)), describe(want));
  EXPECT_EQ(r->last_lookup().filtered_keys, 2u);
  EXPECT_EQ(r->last_lookup().rounds, 1u);
  EXPECT_LT(r->last_lookup().forms_asked, r->last_lookup().forms);
}

// A filter is used only for the generation it is complete for, as the
// current connection sees it: one built before a cut connection, stale
// for what was published meanwhile, hides nothing afterwards.
TEST_F(FleetKeyFilter, AFilterFromBeforeAReconnectHidesNothingPublishedMeanwhile) {
  GenXorb x = index::gen::gen_xorb(30, 100), y = index::gen::gen_xorb(31, 100);
  Key k = index::gen::hash_of_seed(801);
  publish(*writer_, filter_shard({&x}, 1, k));
  auto r = reader(true);
  ASSERT_TRUE(r);
  std::vector<Hash> q(x.raw.begin(), x.raw.end());
  q.insert(q.end(), y.raw.begin(), y.raw.end());
  lookup(*r, q);
  lookup(*r, q);
  ASSERT_EQ(r->last_lookup().filtered_keys, 1u);

  // The reader's connection goes (as in a failover); meanwhile more is
  // published under k.
  test::Admin admin(url_);
  admin.one(
      "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() "
      "AND pid <> pg_backend_pid()");
  auto later = filter_shard({&y}, 2, k);
  auto cut = writer_->publish(*later.view, later.hash);  // fails when the writer's connection was cut too
  (void)cut;
  publish(*writer_, later);
  ChunkAnswers out;
  auto lost = r->lookup_chunks(q, out, Deadline::in(kDeadline));  // may fail: the connection was cut
  (void)lost;
  auto a = lookup(*r, q);
  if (r->last_lookup().filtered_keys == 0) a = lookup(*r, q);  // the first call on a new connection lists again
  EXPECT_EQ(r->last_lookup().filtered_keys, 1u);
  EXPECT_EQ(r->last_lookup().rounds, 1u);
  for (std::size_t i = 0; i < q.size(); ++i) {
    ASSERT_EQ(a.of(i).size(), 1u) << i;
    EXPECT_EQ(a.of(i)[0].xorb, i < 100 ? x.hash : y.hash);
  }
}

}  // namespace dedupd::fleet::key_filter_test
