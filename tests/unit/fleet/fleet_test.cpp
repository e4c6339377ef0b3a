// The fleet library against a real PostgreSQL (the ctest fixture fleet_pg,
// or a private cluster for tests that stop or promote servers). Each test
// works in a database of its own.
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
#include "tests/unit/fleet/pg_support.hpp"
#include "tests/unit/index/gen.hpp"

namespace dedupd::fleet {
namespace {

using index::gen::GenXorb;
using index::gen::OwnedShard;
using index::gen::ShardSpec;
using test::Admin;
using test::Cluster;
using test::kDeadline;
using test::load_fleet_v2;
using test::lookup;
using test::publish;

ConnectOptions options(const std::string& url, const std::string& host) {
  ConnectOptions o;
  o.url = url;
  o.host_name = host;
  o.retry_after = std::chrono::milliseconds(0);
  o.connect_timeout = kDeadline;  // a busy CI machine is not an outage
  return o;
}

std::unique_ptr<Writer> writer(const std::string& url, const std::string& host) {
  auto w = Writer::connect(options(url, host));
  EXPECT_TRUE(w) << (w ? "" : w.error().to_string());
  return w ? std::move(*w) : nullptr;
}

// holders_max_age 0: the holders as the database has them at each lookup
// (tests of what the writer changes in them).
std::unique_ptr<Reader> reader(const std::string& url,
                               std::chrono::milliseconds holders_max_age = ConnectOptions{}.holders_max_age) {
  auto o = options(url, "reader");
  o.holders_max_age = holders_max_age;
  auto r = Reader::connect(o);
  EXPECT_TRUE(r) << (r ? "" : r.error().to_string());
  return r ? std::move(*r) : nullptr;
}

OwnedShard make_shard(std::vector<const GenXorb*> xorbs, std::uint64_t created, Key key = {},
                      std::optional<std::uint64_t> expiry = {}, std::vector<shard::FileRecord> files = {}) {
  ShardSpec spec;
  spec.xorbs = std::move(xorbs);
  spec.created = created;
  spec.key = key;
  spec.expiry = expiry;
  spec.files = std::move(files);
  return index::gen::own(index::gen::build_shard(spec));
}

// Holder names of every shard listing the location, "shard:host,host;...".
std::vector<std::string> holders(const ChunkAnswers& a, const ChunkLocation& l) {
  std::vector<std::string> out;
  for (const auto& s : a.shards(l)) {
    std::string names;
    for (const auto& h : s.holders) names += (names.empty() ? "" : ",") + h;
    out.push_back(names);
  }
  return out;
}

// The CASes of each shard a lookup names ("" unknown), in answer order.
std::vector<std::string> cas_of(const ChunkAnswers& a, const ChunkLocation& l) {
  std::vector<std::string> out;
  for (const auto& s : a.shards(l)) out.push_back(s.cas);
  return out;
}

class FleetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = Cluster::shared().new_database();
    url_ = Cluster::shared().primary_url(db_);
  }
  std::string db_, url_;
};

TEST_F(FleetTest, MigrateCreatesThenIsANoOpAndANewerSchemaIsRefused) {
  auto w = writer(url_, "a");
  ASSERT_TRUE(w);
  auto v = w->schema_version();
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, known_schema_version());
  auto again = w->migrate();
  ASSERT_TRUE(again) << again.error().to_string();
  EXPECT_FALSE(again->changed());
  EXPECT_EQ(again->to, known_schema_version());

  Admin admin(url_);
  admin.one("UPDATE dedupd.schema_version SET version = " + std::to_string(known_schema_version() + 1));
  auto refused = Writer::connect(options(url_, "b"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().rule, kRuleSchemaNewer);
  EXPECT_NE(refused.error().message.find(std::to_string(known_schema_version() + 1)), std::string::npos);
  EXPECT_NE(refused.error().message.find(std::to_string(known_schema_version())), std::string::npos);
  auto refused_reader = Reader::connect(options(url_, "r"));
  ASSERT_FALSE(refused_reader);
  EXPECT_EQ(refused_reader.error().rule, kRuleSchemaNewer);
}

// Version 7 only adds (issue 61): `version`, all that dedupd 0.1.0 reads
// and wants to be exactly 6, stays; `applied` counts the migrations. A later
// release's additive migration leaves this dedupd working the same way.
TEST_F(FleetTest, AnAdditiveMigrationKeepsOlderDedupdWorking) {
  ASSERT_GE(known_schema_version(), 7u);
  auto w = writer(url_, "a");
  ASSERT_TRUE(w);
  Admin admin(url_);
  EXPECT_EQ(admin.one("SELECT version FROM dedupd.schema_version"), "6");
  EXPECT_EQ(admin.one("SELECT applied FROM dedupd.schema_version"), std::to_string(known_schema_version()));
  admin.one("UPDATE dedupd.schema_version SET applied = applied + 1 RETURNING applied");
  EXPECT_TRUE(Writer::connect(options(url_, "b")));
  EXPECT_TRUE(Reader::connect(options(url_, "r")));
  auto again = migrate(options(url_, "unused"));
  ASSERT_TRUE(again) << again.error().to_string();
  EXPECT_FALSE(again->changed());
  // This dedupd says which release it is; the status lists it per host.
  EXPECT_EQ(admin.one("SELECT coalesce(version, 'null') FROM dedupd.host WHERE name = 'a'"), "null");
  auto o = options(url_, "c");
  o.software_version = "9.8.7";
  ASSERT_TRUE(Writer::connect(o));
  auto r = reader(url_);
  ASSERT_TRUE(r);
  auto st = r->status(Deadline::in(kDeadline));
  ASSERT_TRUE(st) << st.error().to_string();
  std::vector<std::string> versions;
  for (const auto& h : st->hosts) versions.push_back(h.name + "=" + h.version);
  EXPECT_EQ(versions, (std::vector<std::string>{"a=", "b=", "c=9.8.7"}));
}

// A migration that older dedupd could not use waits for the operator: it
// runs only with --final, and a dedupd that does not know it is refused.
TEST_F(FleetTest, AMigrationThatIsNotAdditiveWaitsForFinal) {
  ASSERT_TRUE(writer(url_, "a"));
  auto steps = schema::migrations();
  steps.push_back({"CREATE TABLE dedupd.later (a integer);", false});
  auto c = detail::Connection::open_until(url_, detail::Role::primary, std::chrono::steady_clock::now() + kDeadline);
  ASSERT_TRUE(c) << c.error().to_string();
  auto refused = schema::migrate(**c, steps, false);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().rule, kRuleSchemaFinal);
  EXPECT_NE(refused.error().message.find("dedupd --fleet-migrate --final"), std::string::npos)
      << refused.error().message;
  Admin admin(url_);
  EXPECT_EQ(admin.one("SELECT to_regclass('dedupd.later') IS NULL"), "t");
  EXPECT_EQ(admin.one("SELECT applied FROM dedupd.schema_version"), std::to_string(known_schema_version()));
  auto done = schema::migrate(**c, steps, true);
  ASSERT_TRUE(done) << done.error().to_string();
  EXPECT_EQ(done->to, known_schema_version() + 1);
  EXPECT_EQ(admin.one("SELECT version FROM dedupd.schema_version"), std::to_string(known_schema_version() + 1));
  auto newer = Writer::connect(options(url_, "b"));
  ASSERT_FALSE(newer);
  EXPECT_EQ(newer.error().rule, kRuleSchemaNewer);
}

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

TEST_F(FleetTest, TheMigrateCommandReportsWhatItDid) {
  auto first = migrate(options(url_, "unused"));
  ASSERT_TRUE(first) << first.error().to_string();
  EXPECT_EQ(first->from, 0u);
  EXPECT_EQ(first->to, known_schema_version());
  auto again = migrate(options(url_, "unused"));
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->changed());
  Admin admin(url_);
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.host"), "0");
}

// Schema 2 upgrades a schema-1 database in place: what a version-1 dedupd
// published stays (its xorb order is the hash order it had), and shards
// published after list their xorbs in their own order.
TEST_F(FleetTest, Schema1IsUpgradedInPlaceAndNewShardsKeepTheirXorbOrder) {
  ASSERT_GE(known_schema_version(), 2u);
  Admin admin(url_);
  // A schema-1 database as version 1 made it, with one shard published.
  admin.one(
      "CREATE SCHEMA dedupd; CREATE TABLE dedupd.schema_version (single boolean PRIMARY KEY DEFAULT true CHECK "
      "(single), version integer NOT NULL, upgraded_at timestamptz NOT NULL DEFAULT now()); INSERT INTO "
      "dedupd.schema_version (version) VALUES (1);");
  admin.one(schema::migrations()[0].sql);
  admin.one("INSERT INTO dedupd.host (name) VALUES ('old-host')");
  admin.one(
      "INSERT INTO dedupd.xorb (hash, chunks, refs, cas_block) VALUES (decode(repeat('02', 32), 'hex'), 1, 1, "
      "'\\x00'), (decode(repeat('01', 32), 'hex'), 1, 1, '\\x00')");
  admin.one(
      "INSERT INTO dedupd.shard (hash, chunks, xorb_ids, file_ids) VALUES (decode(repeat('aa', 32), 'hex'), 2, "
      "'{2,1}', '{}')");
  admin.one("INSERT INTO dedupd.hold (shard_id, host_id) SELECT s.id, h.id FROM dedupd.shard s, dedupd.host h");

  auto m = migrate(options(url_, "unused"));
  ASSERT_TRUE(m) << m.error().to_string();
  EXPECT_EQ(m->from, 1u);
  EXPECT_EQ(m->to, known_schema_version());
  EXPECT_EQ(admin.one("SELECT xorb_order::text FROM dedupd.shard"), "{2,1}");
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.hold"), "1");

  // A shard whose xorbs are not in hash order, one of them twice.
  GenXorb x1 = index::gen::gen_xorb(21, 3), x2 = index::gen::gen_xorb(22, 4), x3 = index::gen::gen_xorb(23, 5);
  std::vector<const GenXorb*> order = {&x1, &x2, &x3};
  std::sort(order.begin(), order.end(), [](const GenXorb* a, const GenXorb* b) { return b->hash < a->hash; });
  order.push_back(order[0]);
  auto s = make_shard(order, 1);
  auto w = writer(url_, "host-a");
  ASSERT_TRUE(w);
  EXPECT_EQ(publish(*w, s).result, PublishResult::added);
  std::string expected;
  for (std::size_t i = 0; i + 1 < order.size(); ++i) expected += (i ? "," : "") + order[i]->hash.to_hex_bytes();
  EXPECT_EQ(admin.one("SELECT string_agg(encode(x.hash, 'hex'), ',' ORDER BY o.n) FROM dedupd.shard s, "
                      "unnest(s.xorb_order) WITH ORDINALITY AS o (id, n) JOIN dedupd.xorb x ON x.id = o.id "
                      "WHERE s.hash = decode('" +
                      s.hash.to_hex_bytes() + "', 'hex')"),
            expected);
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.shard"), "2");
}

// The answers of tests/fixtures/fleet-v2/answers.txt, as its writer
// (make_fleet_v2.cpp.txt there) printed them: one line per answer, so "as
// before" is a text comparison.
std::string hex_of(std::span<const std::uint8_t> b) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (auto c : b) {
    s += d[c >> 4];
    s += d[c & 15];
  }
  return s;
}
std::string shards_text(const std::vector<FleetShardRef>& refs) {
  std::vector<std::string> items;
  for (const auto& r : refs) {
    std::string item = r.shard.to_string() + "=";
    for (std::size_t i = 0; i < r.holders.size(); ++i) item += (i ? "," : "") + r.holders[i];
    items.push_back(item);
  }
  std::sort(items.begin(), items.end());
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : " ") + i;
  return s;
}
std::string lookup_text(const ChunkAnswers& a, std::size_t q) {
  std::string s;
  for (const auto& l : a.of(q)) {
    s += " " + l.xorb.to_string() + ":" + std::to_string(l.chunk_index) + " [" + std::to_string(l.byte_start) + "," +
         std::to_string(l.byte_end) + ") u" + std::to_string(l.unpacked_bytes) + " f" + std::to_string(l.flags) +
         (l.keyed ? " key " + l.key.to_string() : std::string(" raw")) + " {" + shards_text(a.shards(l)) + "}";
  }
  return s.empty() ? " none" : s;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A schema-2 database as c91351c wrote it (tests/fixtures/fleet-v2): upgraded
// in place to the covering index of schema 3, it answers every lookup,
// xorb and file (holders included) as c91351c answered, and takes new
// shards.
TEST_F(FleetTest, AFleetDatabaseOfC91351cIsUpgradedInPlaceAndAnswersAsBefore) {
  const std::string dir = load_fleet_v2(url_);
  ASSERT_FALSE(dir.empty());
  Admin admin(url_);
  ASSERT_EQ(admin.one("SELECT version FROM dedupd.schema_version"), "2");
  auto m = migrate(options(url_, "unused"));
  ASSERT_TRUE(m) << m.error().to_string();
  EXPECT_EQ(m->from, 2u);
  EXPECT_EQ(m->to, known_schema_version());
  EXPECT_EQ(
      admin.one("SELECT indexdef FROM pg_indexes WHERE schemaname = 'dedupd' AND indexname = 'chunk_prefix_xorb'"),
      "CREATE INDEX chunk_prefix_xorb ON ONLY dedupd.chunk USING btree (prefix) INCLUDE (xorb_id, chunk_index)");
  EXPECT_EQ(admin.one("SELECT count(*) FROM pg_indexes WHERE schemaname = 'dedupd' AND indexname = 'chunk_prefix'"),
            "0");

  auto r = reader(url_);
  ASSERT_TRUE(r);
  std::istringstream expected(read_text(dir + "/answers.txt"));
  std::vector<std::string> want, got;
  std::vector<Hash> queries;
  for (std::string line; std::getline(expected, line);) {
    want.push_back(line);
    if (line.rfind("chunk ", 0) == 0) {
      auto h = Hash::parse(line.substr(6, 64));
      ASSERT_TRUE(h) << line;
      queries.push_back(*h);
    }
  }
  ASSERT_EQ(queries.size(), 15u);
  // Twice: from the database, then from the Reader's caches.
  for (int pass = 0; pass < 2; ++pass) {
    got.clear();
    auto ans = lookup(*r, queries);
    for (std::size_t i = 0; i < queries.size(); ++i)
      got.push_back("chunk " + queries[i].to_string() + lookup_text(ans, i));
    for (const auto& line : want) {
      if (line.rfind("xorb ", 0) == 0) {
        auto h = Hash::parse(line.substr(5, 64));
        ASSERT_TRUE(h);
        auto xa = r->xorb(*h, Deadline::in(kDeadline));
        ASSERT_TRUE(xa) << xa.error().to_string();
        std::string text = "xorb " + h->to_string();
        if (!*xa) text += " none";
        else
          for (const auto& f : (*xa)->forms)
            text += " " + (f.keyed ? f.key.to_string() : std::string("raw")) + " " + hex_of(f.cas_block) + " {" +
                    shards_text(f.shards) + "}";
        got.push_back(text);
      } else if (line.rfind("file ", 0) == 0) {
        auto h = Hash::parse(line.substr(5, 64));
        ASSERT_TRUE(h);
        auto fa = r->file(*h, Deadline::in(kDeadline));
        ASSERT_TRUE(fa && *fa);
        got.push_back("file " + h->to_string() + " " + hex_of((*fa)->block) + " " +
                      ((*fa)->sha256 ? (*fa)->sha256->to_string() : "-") + " {" + shards_text((*fa)->shards) + "}");
      }
    }
    EXPECT_EQ(got, want) << "pass " << pass;
  }

  // New shards go in and are found, next to the old ones.
  GenXorb x = index::gen::gen_xorb(9101, 6);
  auto w = writer(url_, "host-c");
  ASSERT_TRUE(w);
  EXPECT_EQ(publish(*w, make_shard({&x}, 77)).result, PublishResult::added);
  std::vector<Hash> q = {x.raw[3], queries[0]};
  auto ans = lookup(*r, q);
  ASSERT_EQ(ans.of(0).size(), 1u);
  EXPECT_EQ(holders(ans, ans.of(0)[0]), std::vector<std::string>{"host-c"});
  EXPECT_EQ("chunk " + queries[0].to_string() + lookup_text(ans, 1), want[0]);
}

// A schema-3 database as a release of schema 3 left it (c91351c's fixture
// upgraded by the released version-3 step): upgraded in place to schema 4
// and on,
// every shard's CAS is unknown and every answer is as before; shards
// published after carry theirs, next to the old ones.
TEST_F(FleetTest, AFleetDatabaseOfSchema3IsUpgradedInPlaceItsShardsOfUnknownCas) {
  const std::string dir = load_fleet_v2(url_);
  ASSERT_FALSE(dir.empty());
  Admin admin(url_);
  admin.one(schema::migrations()[2].sql + "UPDATE dedupd.schema_version SET version = 3;");
  ASSERT_EQ(admin.one("SELECT version FROM dedupd.schema_version"), "3");
  const std::string shards_before = admin.one("SELECT count(*) FROM dedupd.shard");
  ASSERT_NE(shards_before, "0");

  // The answers of schema 3, to compare with those of schema 4.
  std::istringstream expected(read_text(dir + "/answers.txt"));
  std::vector<Hash> queries;
  for (std::string line; std::getline(expected, line);)
    if (line.rfind("chunk ", 0) == 0) queries.push_back(Hash::parse(line.substr(6, 64)).value());
  ASSERT_EQ(queries.size(), 15u);

  auto m = migrate(options(url_, "unused"));
  ASSERT_TRUE(m) << m.error().to_string();
  EXPECT_EQ(m->from, 3u);
  EXPECT_EQ(m->to, known_schema_version());
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.shard"), shards_before);
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.shard WHERE cas IS NOT NULL"), "0");

  auto r = reader(url_);
  ASSERT_TRUE(r);
  auto ans = lookup(*r, queries);
  std::vector<std::string> want, got;
  std::istringstream again(read_text(dir + "/answers.txt"));
  for (std::string line; std::getline(again, line);)
    if (line.rfind("chunk ", 0) == 0) want.push_back(line);
  std::size_t hits = 0;
  for (std::size_t i = 0; i < queries.size(); ++i) {
    got.push_back("chunk " + queries[i].to_string() + lookup_text(ans, i));
    for (const auto& l : ans.of(i)) {
      ++hits;
      for (const auto& c : cas_of(ans, l)) EXPECT_EQ(c, "") << "a shard of schema 3 of known CAS";
    }
  }
  EXPECT_EQ(got, want);
  EXPECT_GT(hits, 0u);

  // A shard of schema 3 learns the CASes of the hosts that publish it again
  // (the fixture's shard 2, built as its writer built it, held by host-b).
  GenXorb x2 = index::gen::gen_xorb(9002, 7), x3 = index::gen::gen_xorb(9003, 4);
  auto s2 = make_shard({&x2, &x3}, 2, {}, {}, {index::gen::gen_file(72, x3, 1, 3, false, false)});
  auto old_b = writer(url_, "host-b");
  auto old_a = writer(url_, "host-a");
  ASSERT_TRUE(old_b && old_a);
  auto again_b = publish(*old_b, s2, "https://cas-b.example");
  EXPECT_EQ(again_b.result, PublishResult::already_held);
  EXPECT_TRUE(again_b.cas_learned);
  EXPECT_EQ(publish(*old_a, s2, "https://cas-a.example").result, PublishResult::new_holder);
  std::vector<Hash> q3 = {x3.raw[2]};
  auto learned = lookup(*r, q3, true);
  ASSERT_EQ(learned.of(0).size(), 1u);
  EXPECT_EQ(cas_of(learned, learned.of(0)[0]), std::vector<std::string>{"https://cas-a.example https://cas-b.example"});
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.shard"), shards_before);

  // A shard published now says its CAS.
  GenXorb x = index::gen::gen_xorb(9141, 4);
  auto s = make_shard({&x}, 78);
  auto w = writer(url_, "host-d");
  ASSERT_TRUE(w);
  EXPECT_EQ(publish(*w, s, "https://cas-d.example").result, PublishResult::added);
  std::vector<Hash> q = {x.raw[1]};
  auto fresh = lookup(*r, q);
  ASSERT_EQ(fresh.of(0).size(), 1u);
  EXPECT_EQ(cas_of(fresh, fresh.of(0)[0]), std::vector<std::string>{"https://cas-d.example"});
}

// A schema-5 database (c91351c's fixture upgraded by the released steps 3
// to 5) is upgraded in place to schema 6: the same chunk rows, each with
// what a hit answers from its CAS entry, and every answer as before, from
// the index-only probe and its slices and from the probe that reads the
// entries. A dead xorb's rows still go with it.
TEST_F(FleetTest, AFleetDatabaseOfSchema5IsUpgradedInPlaceEachChunkRowWithItsEntry) {
  const std::string dir = load_fleet_v2(url_);
  ASSERT_FALSE(dir.empty());
  Admin admin(url_);
  admin.one(schema::migrations()[2].sql + schema::migrations()[3].sql + schema::migrations()[4].sql +
            "UPDATE dedupd.schema_version SET version = 5;");
  const char* const rows_sql =
      "SELECT string_agg(prefix::text || ':' || xorb_id::text || ':' || chunk_index::text, ',' ORDER BY prefix, "
      "xorb_id, chunk_index) FROM dedupd.chunk";
  const std::string rows_before = admin.one(rows_sql);
  const std::string blocks_before =
      admin.one("SELECT string_agg(encode(cas_block, 'hex'), ',' ORDER BY id) FROM dedupd.xorb");
  const std::string chunks_before = admin.one("SELECT count(*) FROM dedupd.chunk");
  ASSERT_NE(chunks_before, "0");

  auto m = migrate(options(url_, "unused"));
  ASSERT_TRUE(m) << m.error().to_string();
  EXPECT_EQ(m->from, 5u);
  EXPECT_EQ(m->to, known_schema_version());
  EXPECT_EQ(admin.one(rows_sql), rows_before);
  EXPECT_EQ(admin.one("SELECT string_agg(encode(cas_block, 'hex'), ',' ORDER BY id) FROM dedupd.xorb"), blocks_before);
  EXPECT_EQ(admin.one("SELECT count(*) FROM pg_class WHERE relname LIKE 'chunk6%'"), "0");
  EXPECT_EQ(admin.one("SELECT count(*) FROM pg_indexes WHERE schemaname = 'dedupd' AND tablename = 'chunk'"), "1");
  EXPECT_EQ(admin.one("SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE "
                      "n.nspname = 'dedupd' AND c.relname LIKE 'chunk\\_p%' AND c.relkind = 'r' AND "
                      "array_to_string(c.reloptions, ',') LIKE '%autovacuum_vacuum_insert_scale_factor=0.02%'"),
            std::to_string(schema::kChunkPartitions));

  // The answers of c91351c, read twice with no cache: the first probe
  // index-only and each entry sliced out of its block, the second reading
  // the entries with the hits.
  std::istringstream expected(read_text(dir + "/answers.txt"));
  std::vector<std::string> want;
  std::vector<Hash> queries;
  for (std::string line; std::getline(expected, line);)
    if (line.rfind("chunk ", 0) == 0) {
      want.push_back(line);
      queries.push_back(Hash::parse(line.substr(6, 64)).value());
    }
  ConnectOptions no_cache = options(url_, "unused");
  no_cache.xorb_cache = std::make_shared<XorbCache>(0);
  auto r = Reader::connect(no_cache);
  ASSERT_TRUE(r) << r.error().to_string();
  for (int pass = 0; pass < 2; ++pass) {
    auto ans = lookup(**r, queries);
    std::vector<std::string> got;
    for (std::size_t i = 0; i < queries.size(); ++i)
      got.push_back("chunk " + queries[i].to_string() + lookup_text(ans, i));
    EXPECT_EQ(got, want) << "pass " << pass;
    EXPECT_EQ((*r)->last_lookup().probed_entries, pass == 1);
    EXPECT_GT((*r)->last_lookup().entries_sliced, 0u) << "pass " << pass;
    EXPECT_EQ((*r)->last_lookup().blocks_read, 0u) << "pass " << pass;
  }

  // A xorb's rows leave with it.
  auto w = writer(url_, "host-z");
  ASSERT_TRUE(w);
  GenXorb x = index::gen::gen_xorb(9161, 5);
  auto s = make_shard({&x}, 79);
  EXPECT_EQ(publish(*w, s).result, PublishResult::added);
  const std::string with_it = admin.one("SELECT count(*) FROM dedupd.chunk");
  EXPECT_EQ(std::stoll(with_it), std::stoll(chunks_before) + 5);
  // What the writer put in its rows answers as its block does.
  std::vector<Hash> fresh(x.raw.begin(), x.raw.end());
  auto from_rows = lookup(**r, fresh);
  EXPECT_TRUE((*r)->last_lookup().probed_entries);
  auto with_blocks = reader(url_);
  ASSERT_TRUE(with_blocks);
  auto from_block = lookup(*with_blocks, fresh);
  EXPECT_EQ(with_blocks->last_lookup().blocks_read, 1u);
  for (std::size_t i = 0; i < fresh.size(); ++i) {
    EXPECT_EQ(from_rows.of(i).size(), 1u);
    EXPECT_EQ(lookup_text(from_rows, i), lookup_text(from_block, i));
  }
  ASSERT_TRUE(w->drop_hold(s.hash));
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.chunk"), chunks_before);
}

// A global-dedup reply from the fleet takes a shard's xorbs as a local one
// does: the chunk's xorb, then those after it, then those before, within
// the bounds; a keyed shard comes with its key and expiry, an expired one
// never.
TEST_F(FleetTest, AShardsXorbsComeInReplyOrderWithinTheBounds) {
  auto w = writer(url_, "host-a");
  auto r = reader(url_);
  ASSERT_TRUE(w && r);
  GenXorb x1 = index::gen::gen_xorb(31, 3), x2 = index::gen::gen_xorb(32, 4), x3 = index::gen::gen_xorb(33, 5),
          x4 = index::gen::gen_xorb(34, 6);
  auto s = make_shard({&x1, &x2, &x3, &x4}, 1);
  publish(*w, s);
  auto ask = [&](const Hash& shard, const Hash& first, std::uint64_t max_xorbs, std::uint64_t max_bytes,
                 std::uint64_t now = 100) {
    const ShardCandidate one{shard, first};
    auto a = r->shard_xorbs(std::span(&one, 1), {max_xorbs, max_bytes}, now, Deadline::in(kDeadline));
    EXPECT_TRUE(a) << (a ? "" : a.error().to_string());
    return a ? *a : std::optional<ShardXorbs>{};
  };
  auto hashes = [](const std::optional<ShardXorbs>& a) {
    std::vector<Hash> out;
    if (a)
      for (const auto& x : a->xorbs) out.push_back(x.hash);
    return out;
  };
  auto block = [](std::uint64_t chunks) { return shard::kEntrySize * (1 + chunks); };

  auto all = ask(s.hash, x3.hash, 100, 1 << 20);
  ASSERT_TRUE(all);
  EXPECT_EQ(hashes(all), (std::vector<Hash>{x3.hash, x4.hash, x1.hash, x2.hash}));
  EXPECT_FALSE(all->key);
  EXPECT_FALSE(all->expiry);
  ASSERT_EQ(all->xorbs[0].cas_block.size(), block(5));
  shard::XorbBlock stored(all->xorbs[0].cas_block.data(), 0);
  EXPECT_EQ(stored.hash(), x3.hash);
  EXPECT_EQ(stored.chunk(0).chunk_hash, x3.raw[0]);
  EXPECT_EQ(hashes(ask(s.hash, x3.hash, 2, 1 << 20)), (std::vector<Hash>{x3.hash, x4.hash}));
  EXPECT_EQ(hashes(ask(s.hash, x3.hash, 100, block(5) + block(6))), (std::vector<Hash>{x3.hash, x4.hash}));
  EXPECT_EQ(hashes(ask(s.hash, x3.hash, 100, block(5) + block(6) - 1)), (std::vector<Hash>{x3.hash}));
  EXPECT_EQ(hashes(ask(s.hash, x3.hash, 100, 1)), (std::vector<Hash>{x3.hash})) << "the chunk's xorb always goes in";
  EXPECT_EQ(hashes(ask(s.hash, x1.hash, 100, 1 << 20)), (std::vector<Hash>{x1.hash, x2.hash, x3.hash, x4.hash}));
  EXPECT_FALSE(ask(s.hash, index::gen::hash_of_seed(777), 100, 1 << 20)) << "a xorb the shard does not list";
  EXPECT_FALSE(ask(index::gen::hash_of_seed(778), x1.hash, 100, 1 << 20)) << "no such shard";

  Key key = index::gen::hash_of_seed(779);
  GenXorb x5 = index::gen::gen_xorb(35, 2);
  auto keyed = make_shard({&x5}, 2, key, 1000);
  publish(*w, keyed);
  auto k = ask(keyed.hash, x5.hash, 100, 1 << 20, 999);
  ASSERT_TRUE(k);
  ASSERT_TRUE(k->key);
  EXPECT_EQ(*k->key, key);
  EXPECT_EQ(k->expiry, std::optional<std::uint64_t>(1000));
  ASSERT_EQ(hashes(k), std::vector<Hash>{x5.hash});
  ASSERT_EQ(k->xorbs[0].cas_block.size(), block(2));
  shard::XorbBlock kb(k->xorbs[0].cas_block.data(), 0);
  EXPECT_EQ(kb.chunk(0).chunk_hash, shard::keyed_chunk_hash(key, x5.raw[0])) << "served as stored, keyed";
  EXPECT_FALSE(ask(keyed.hash, x5.hash, 100, 1 << 20, 1000)) << "expired at its shard_key_expiry";
  EXPECT_FALSE(r->shard_xorbs({}, {100, 1 << 20}, 100, Deadline::in(kDeadline)).value()) << "no candidate";
}

// Of several shards holding a chunk, the fleet answers with the one a local
// reply prefers: raw, else the keyed one that expires last; expired ones and
// ones that do not list the chunk's xorb are passed over.
TEST_F(FleetTest, TheBestCandidateShardAnswers) {
  auto w = writer(url_, "host-a");
  auto r = reader(url_);
  ASSERT_TRUE(w && r);
  GenXorb x = index::gen::gen_xorb(41, 3), y = index::gen::gen_xorb(42, 2);
  const Key k1 = index::gen::hash_of_seed(781), k2 = index::gen::hash_of_seed(782);
  auto soon = make_shard({&x}, 11, k1, 500);
  auto late = make_shard({&x, &y}, 12, k2, 900);
  auto raw = make_shard({&y, &x}, 13);
  for (const auto* s : {&soon, &late, &raw}) publish(*w, *s);
  auto best = [&](std::vector<ShardCandidate> c, std::uint64_t now = 100) {
    auto a = r->shard_xorbs(c, {100, 1 << 20}, now, Deadline::in(kDeadline));
    EXPECT_TRUE(a) << (a ? "" : a.error().to_string());
    return a && *a ? (*a)->shard : Hash{};
  };
  const ShardCandidate c_soon{soon.hash, x.hash}, c_late{late.hash, x.hash}, c_raw{raw.hash, x.hash};
  EXPECT_EQ(best({c_soon, c_late, c_raw}), raw.hash) << "raw first";
  auto from_raw = r->shard_xorbs(std::vector{c_raw}, {100, 1 << 20}, 100, Deadline::in(kDeadline)).value();
  ASSERT_TRUE(from_raw);
  EXPECT_FALSE(from_raw->key);
  ASSERT_EQ(from_raw->xorbs.size(), 2u);
  EXPECT_EQ(from_raw->xorbs[0].hash, x.hash) << "the chunk's xorb first, then the one before it";
  EXPECT_EQ(from_raw->xorbs[1].hash, y.hash);
  EXPECT_EQ(best({c_soon, c_late}), late.hash) << "the key that expires last";
  EXPECT_EQ(best({c_late, c_soon}), late.hash);
  EXPECT_EQ(best({c_soon, c_late}, 900), Hash{}) << "both expired";
  EXPECT_EQ(best({c_soon, c_late}, 600), late.hash);
  EXPECT_EQ(best({{soon.hash, y.hash}, c_late}), late.hash) << "a shard that does not list the xorb is passed over";
  EXPECT_EQ(best({{index::gen::hash_of_seed(783), x.hash}, c_soon}), soon.hash) << "an unknown shard is passed over";
}

TEST_F(FleetTest, FreshMigrationReportsFromZero) {
  auto w = Writer::connect(options(url_, "a"));
  ASSERT_TRUE(w);
  Admin admin(url_);
  admin.one("DROP SCHEMA dedupd CASCADE");
  auto m = (*w)->migrate();
  ASSERT_TRUE(m) << m.error().to_string();
  EXPECT_EQ(m->from, 0u);
  EXPECT_EQ(m->to, known_schema_version());
  EXPECT_EQ(admin.one("SELECT count(*) FROM pg_inherits WHERE inhparent = 'dedupd.chunk'::regclass"), "16");
}

TEST_F(FleetTest, ARoleThatMayNotCreateTheSchemaIsToldBothVersions) {
  Admin admin(url_);
  admin.try_exec("CREATE ROLE fleet_plain LOGIN");
  auto w = Writer::connect(options(url_ + " user=fleet_plain", "a"));
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().rule, kRuleSchema) << w.error().to_string();
  EXPECT_NE(w.error().message.find("version 0"), std::string::npos) << w.error().message;
  EXPECT_NE(w.error().message.find("version " + std::to_string(known_schema_version())), std::string::npos);
}

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

TEST_F(FleetTest, AReaderBeforeAnySchemaIsToldSo) {
  auto r = Reader::connect(options(url_, "r"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().rule, kRuleSchema);
}

TEST_F(FleetTest, AnEmptyBlockIsAnEmptyAnswer) {
  auto w = writer(url_, "a");
  auto r = reader(url_);
  ASSERT_TRUE(r);
  auto a = lookup(*r, {});
  EXPECT_EQ(a.size(), 0u);
  EXPECT_TRUE(a.locations.empty());
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
