// The migrations against a real PostgreSQL: databases of older schemas
// (tests/fixtures/fleet-v2 and its upgrades) upgraded in place, every
// answer as before.
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

}  // namespace
}  // namespace dedupd::fleet
