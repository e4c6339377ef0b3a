// Applying the migrations (fleet/schema_version.hpp) against a real
// PostgreSQL: a new schema, a no-op, a newer one refused, additive and
// final migrations, the report, a role that may not create the schema.
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

TEST_F(FleetTest, AReaderBeforeAnySchemaIsToldSo) {
  auto r = Reader::connect(options(url_, "r"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().rule, kRuleSchema);
}

}  // namespace
}  // namespace dedupd::fleet
