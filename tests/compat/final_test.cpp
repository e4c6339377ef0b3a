// A release whose fleet migration is not additive (issue 74), as
// docs/OPERATIONS.md ("A fleet, one host at a time") tells an operator to
// take it: its hosts answer locally and keep their shards in their outboxes
// (`fleet.schema_final`) until, with every host upgraded, `dedupd
// --fleet-migrate --final` runs once; then they publish; and there is no way
// back but the database's backup. The next release is dedupd_next_release
// (next_migrations.cpp: this build with a migration 8 that is not additive),
// started in place on the state dirs of this build's hosts, on one fleet
// database of a real PostgreSQL (the fleet_pg fixture).
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "compat_support.hpp"
#include "fleet/fleet.hpp"
#include "fleet_members.hpp"
#include "harness/eventually.hpp"
#include "harness/fleet_host.hpp"
#include "harness/program_run.hpp"
#include "tests/unit/fleet/pg_support.hpp"

namespace dedupd::compat {
namespace {

using fleet::test::Admin;
using fleet::test::Cluster;
using fleet::test::fleet_holds;
using itest::eventually;
using itest::FleetHost;
using itest::MadeShard;
using nlohmann::json;

const Release& next_release() {
  static const Release r{"the next release (a migration that is not additive)", DEDUPD_NEXT_RELEASE,
                         new_release().dedupctl};
  return r;
}

// `dedupd --config C --fleet-migrate [--final]` of release r: its exit
// status and all it printed.
itest::ProgramRun fleet_migrate(const Release& r, const FleetHost& h, bool final) {
  return itest::run_shell("'" + r.dedupd + "' --config '" + h.config.string() + "' --fleet-migrate" +
                          (final ? " --final" : "") + " 2>&1");
}

// dedupd.schema_version as "version V applied A".
std::string schema_numbers(Admin& admin) {
  return "version " + admin.one("SELECT version FROM dedupd.schema_version") + " applied " +
         admin.one("SELECT coalesce(applied::text, 'null') FROM dedupd.schema_version");
}

class FinalMigration : public itest::FleetHostsTest {
 protected:
  FinalMigration() : FleetHostsTest("compat-final") {}

  // Stops m (when it runs) and starts release r on its config and state dir.
  void restart(Member& m, const Release& r) {
    if (m.running) {
      EXPECT_EQ(m.host->process.stop(), 0) << m.host->name << " (" << m.release->name << ")";
    }
    m.running = false;
    ASSERT_NO_FATAL_FAILURE(start_member(m, r));
  }

  // m's fleet link is down for `rule` (its status says why), m answers
  // every shard dropped into it from its index, and those dropped since the
  // link went down wait in its outbox.
  void expect_answering_locally(Member& m, const std::string& rule, std::size_t waiting, const std::string& when) {
    json link;
    EXPECT_TRUE(eventually([&] {
      link = m.host->fleet_link();
      return link["last_error"].is_string() && link["last_error"].get<std::string>().find(rule) != std::string::npos &&
             link["outbox"]["depth"] == waiting;
    })) << when
        << ": " << m.host->name << " (" << m.release->name << "): " << link.dump();
    EXPECT_NE(link["state"], "connected") << when << ": " << link.dump();
    std::vector<Expected> own;
    for (const MadeShard& s : m.host->dropped()) add_expected(own, s, "local", m.host->name);
    StreamAnswer a = stream_query(new_release(), m.host->socket, own, m.host->dir);
    EXPECT_TRUE(a.all_right(own.size())) << when << ": " << m.host->name << ": " << a.describe();
    std::printf("%s: %s (%s): %s\n", when.c_str(), m.host->name.c_str(), m.release->name.c_str(),
                link["last_error"].get<std::string>().c_str());
  }

  std::vector<Member> members;
};

TEST_F(FinalMigration, ANonAdditiveMigrationWaitsForFinalThenTheFleetHasNoWayBack) {
  const Release& old = old_release();
  const Release& now = new_release();
  const Release& next = next_release();
  Cluster& pg = Cluster::shared();
  const std::string url = pg.primary_url(pg.new_database());
  Admin admin(url);
  const std::string known = std::to_string(fleet::known_schema_version());
  const std::string later = std::to_string(fleet::known_schema_version() + 1);

  // Two hosts of this build publish and answer each other.
  std::uint64_t seed = 50'000;
  for (const char* name : {"host-a", "host-b"}) {
    FleetHost& h = keep(std::make_unique<FleetHost>(root, name));
    h.write_config(url, {.lookup_timeout = "10s", .fleet_extra = "", .log_level = "debug", .extra = ""});
    ASSERT_EQ(check_config(next, h.config), "");
    members.push_back({&h, &now, false});
  }
  for (Member& m : members) {
    ASSERT_NO_FATAL_FAILURE(restart(m, now));
    m.host->drop(seed++);
  }
  ASSERT_TRUE(eventually([&] { return fleet_holds(admin) == holds_dropped(members); }, std::chrono::seconds(120)));
  EXPECT_EQ(expect_answered(admin, members, "this build"), 2u);
  EXPECT_EQ(schema_numbers(admin), "version 6 applied " + known);

  // Each upgraded in place to the next release: it does not migrate by
  // itself; it answers what it holds and keeps what it takes in.
  for (Member& m : members) {
    ASSERT_NO_FATAL_FAILURE(restart(m, next));
    m.host->drop(seed++);
    expect_answering_locally(m, "fleet.schema_final", 1, m.host->name + " on the next release");
    EXPECT_NE(m.host->log_text().find("dedupd --fleet-migrate --final"), std::string::npos)
        << "the log does not say what to run";
  }
  EXPECT_EQ(schema_numbers(admin), "version 6 applied " + known);
  EXPECT_EQ(admin.one("SELECT to_regclass('dedupd.next_release') IS NULL"), "t");

  // Without --final the command does nothing and says what to run.
  itest::ProgramRun ran = fleet_migrate(next, *members[0].host, false);
  std::printf("--fleet-migrate: exit %d: %s", ran.code, ran.out.c_str());
  EXPECT_EQ(ran.code, 1) << ran.out;
  EXPECT_NE(ran.out.find("fleet.schema_final"), std::string::npos) << ran.out;
  EXPECT_NE(ran.out.find("not additive"), std::string::npos) << ran.out;
  EXPECT_NE(ran.out.find("dedupd --fleet-migrate --final"), std::string::npos) << ran.out;
  EXPECT_EQ(schema_numbers(admin), "version 6 applied " + known);
  EXPECT_EQ(admin.one("SELECT to_regclass('dedupd.next_release') IS NULL"), "t");

  // --final, once, from the config of any host: the migration runs.
  ran = fleet_migrate(next, *members[1].host, true);
  std::printf("--fleet-migrate --final: exit %d: %s", ran.code, ran.out.c_str());
  EXPECT_EQ(ran.code, 0) << ran.out;
  EXPECT_EQ(ran.out, "fleet schema upgraded from version " + known + " to " + later + "\n");
  EXPECT_EQ(schema_numbers(admin), "version " + later + " applied " + later);
  EXPECT_EQ(admin.one("SELECT note FROM dedupd.next_release"), "made by the next release's --final");
  // Registered no host: the machine running it need not be one of the fleet.
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.host"), "2");
  ran = fleet_migrate(next, *members[1].host, true);
  EXPECT_EQ(ran.code, 0) << ran.out;
  EXPECT_EQ(ran.out, "fleet schema is at version " + later + " already\n");

  // The hosts connect by themselves: their outboxes drain, and each answers
  // the other's shards from the fleet.
  ASSERT_TRUE(eventually([&] { return fleet_holds(admin) == holds_dropped(members); }, std::chrono::seconds(120)))
      << members[0].host->fleet_link() << members[1].host->fleet_link();
  for (Member& m : members) {
    EXPECT_TRUE(eventually([&] { return m.host->outbox_depth() == 0 && m.host->fleet_link()["state"] == "connected"; }))
        << m.host->fleet_link();
    m.host->drop(seed++);
  }
  ASSERT_TRUE(eventually([&] { return fleet_holds(admin) == holds_dropped(members); }, std::chrono::seconds(120)));
  EXPECT_EQ(expect_answered(admin, members, "after --final"), 6u);

  // No way back: this build on host-a's state dir is refused by the fleet,
  // naming both versions, and answers locally; so is v0.1.0.
  Member& back = members[0];
  ASSERT_NO_FATAL_FAILURE(restart(back, now));
  back.host->drop(seed++);
  expect_answering_locally(back, "fleet.schema_newer", 1, "host-a back on this build");
  EXPECT_NE(back.host->fleet_link()["last_error"].get<std::string>().find("needs a dedupd that knows version " + later +
                                                                          "; this one knows " + known),
            std::string::npos)
      << back.host->fleet_link();
  FleetHost& old_host = keep(std::make_unique<FleetHost>(root, "host-old"));
  write_old_config(old_host, url, "10s");
  Member old_member{&old_host, &old, false};
  ASSERT_NO_FATAL_FAILURE(start_member(old_member, old));
  old_host.drop(seed++);
  expect_answering_locally(old_member, "newer than version 6", 1, "v0.1.0 after --final");
  EXPECT_EQ(schema_numbers(admin), "version " + later + " applied " + later) << "a refused host changed the schema";

  for (Member* m : {&members[0], &members[1], &old_member}) EXPECT_EQ(m->host->process.stop(), 0) << m->host->name;
}

}  // namespace
}  // namespace dedupd::compat
