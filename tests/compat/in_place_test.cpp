// An in-place rolling upgrade of a fleet (issue 74), as docs/OPERATIONS.md
// ("A fleet, one host at a time") tells an operator to do it: three hosts
// run v0.1.0's real dedupd (tests/compat/build_release.sh), each on its own
// state dir, watched dir and config, on one fleet database of a real
// PostgreSQL (the fleet_pg fixture). One at a time, each is stopped and this
// build's dedupd started on the same config and state dir; then one is
// rolled back to v0.1.0 the same way.
//
// Each restart happens with shards waiting: the fleet refuses publishes for
// a while (a trigger; lookups go on), so the host stopped has entries in its
// outbox, and more shards are dropped into its watched dir while no dedupd
// runs there. The dedupd started next must show those entries queued
// (the outbox v0.1.0 wrote, or this build did), find the shards dropped
// meanwhile, and publish both once the fleet takes writes again. Between
// restarts every host publishes and every host, of either release, answers
// every shard: its own from its index, the others' from the fleet.
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

// Shards each running host gets at each step, and the stopped one while down.
constexpr std::size_t kPerStep = 2;

class InPlace : public itest::FleetHostsTest {
 protected:
  InPlace() : FleetHostsTest("compat-in-place") {}

  void drop_into(Member& m, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) m.host->drop(next_seed++);
  }

  // Every running host publishes shards of its own; all of them reach the
  // fleet, every outbox drains, and every host answers every shard.
  void publish_and_answer(Admin& admin, const std::string& when) {
    for (Member& m : members)
      if (m.running) drop_into(m, kPerStep);
    const std::set<std::string> every = holds_dropped(members);
    ASSERT_TRUE(eventually([&] { return fleet_holds(admin) == every; }, std::chrono::seconds(120)))
        << when << ": " << every.size() << " shards dropped, the fleet holds " << fleet_holds(admin).size();
    for (Member& m : members) {
      EXPECT_TRUE(eventually([&] { return m.host->outbox_depth() == 0; }))
          << when << ": " << m.host->name << ": " << m.host->fleet_link();
      EXPECT_EQ(m.host->http().get("/v1/stats").json()["shards"]["live"], json(m.host->dropped().size()))
          << when << ": " << m.host->name;
      expect_old_not_refused(m, when);
    }
    EXPECT_EQ(expect_answered(admin, members, when), every.size());
    // Whatever runs, the schema stays one v0.1.0 uses.
    EXPECT_EQ(fleet_schema_version(admin), kOldFleetSchema) << when << ": " << schema_row(admin);
    std::printf("%s: %zu shards in the fleet, every host answers each\n", when.c_str(), every.size());
  }

  // Stops m and starts release r on its state dir, with entries in its
  // outbox and shards in its watched dir that no dedupd has seen.
  void restart_in_place(Admin& admin, Member& m, const Release& r, const std::string& when) {
    // The fleet refuses every publish for now (a server refusing, which a
    // publisher retries; the entries stay queued), so m stops with entries
    // in its outbox. Not a lock: a dedupd stopped while its statement waits
    // on one stops only when the statement ends (up to the writer's 60 s
    // statement timeout), v0.1.0 and this build alike.
    ASSERT_EQ(admin.try_exec("CREATE TRIGGER refuse_for_now BEFORE INSERT ON dedupd.hold FOR EACH ROW EXECUTE "
                             "FUNCTION public.refuse_for_now()"),
              "");
    for (Member& o : members)
      if (o.running) drop_into(o, kPerStep);
    ASSERT_TRUE(eventually([&] { return m.host->outbox_depth() == kPerStep; })) << when << ": " << m.host->fleet_link();
    const std::size_t queued = m.host->outbox_depth();
    EXPECT_EQ(m.host->process.stop(), 0) << when << ": " << m.host->name << " (" << m.release->name
                                         << ") did not stop cleanly with its outbox waiting";
    m.running = false;
    drop_into(m, kPerStep);

    ASSERT_NO_FATAL_FAILURE(start_member(m, r));
    // What was queued at the stop is queued still, with what it found in its
    // watched dir at the start; its index answers every shard it was given.
    std::size_t depth = 0;
    EXPECT_TRUE(eventually([&] { return (depth = m.host->outbox_depth()) == queued + kPerStep; }))
        << when << ": " << queued << " entries queued when " << m.host->name << " stopped and " << kPerStep
        << " shards dropped while it was down; the outbox holds " << depth << ": " << m.host->fleet_link();
    std::vector<Expected> own;
    for (const MadeShard& s : m.host->dropped()) add_expected(own, s, "local", m.host->name);
    StreamAnswer last;
    EXPECT_TRUE(eventually([&] {
      return (last = stream_query(r, m.host->socket, own, m.host->dir)).all_right(own.size());
    })) << when
        << ": " << m.host->name << " (" << r.name << ") on its state dir: " << last.describe();
    EXPECT_EQ(m.host->http().get("/v1/stats").json()["shards"]["live"], json(m.host->dropped().size())) << when;
    expect_index_opened_in_place(*m.host, m.host->name + " (" + r.name + ")");
    std::printf("%s: %s (%s) started on its state dir with %zu outbox entries (%zu queued at the stop)\n", when.c_str(),
                m.host->name.c_str(), r.name.c_str(), depth, queued);
    ASSERT_EQ(admin.try_exec("DROP TRIGGER refuse_for_now ON dedupd.hold"), "");
  }

  // What `dedupctl fleet status` shows, as this build's dedupd m answers it:
  // each host's release ("-" for none), and whether it says an upgrade is
  // under way.
  std::string fleet_versions(Member& m) {
    const json doc = m.host->http().get("/v1/fleet/status").json();
    std::string out;
    for (const json& h : doc["hosts"])
      out +=
          h["name"].get<std::string>() + "=" + (h["version"].is_string() ? h["version"].get<std::string>() : "-") + " ";
    return out + (doc["mid_upgrade"] == true ? "mid-upgrade" : "one release");
  }

  std::vector<Member> members;
  std::uint64_t next_seed = 40'000;
};

TEST_F(InPlace, ThreeHostsUpgradedOneAtATimeOnTheirStateDirsThenOneRolledBack) {
  const Release& old = old_release();
  const Release& now = new_release();
  Cluster& pg = Cluster::shared();
  const std::string url = pg.primary_url(pg.new_database());
  Admin admin(url);
  ASSERT_EQ(admin.try_exec("CREATE FUNCTION public.refuse_for_now() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                           "RAISE EXCEPTION 'the fleet refuses writes for now (the test)'; END $$"),
            "");
  // This build's release, as its hosts write it in the fleet's host table.
  itest::ProgramRun version = itest::run_shell("'" + now.dedupd + "' --version");
  ASSERT_EQ(version.out.rfind("dedupd ", 0), 0u) << version.out;
  const std::string release = version.out.substr(7, version.out.find('\n') - 7);

  for (const char* name : {"host-1", "host-2", "host-3"}) {
    FleetHost& h = keep(std::make_unique<FleetHost>(root, name));
    // One config for both releases, kept through the upgrade. Lookups are
    // bounded generously: under a sanitizer on a busy machine one can take
    // a while, and "unavailable" is not what is tested here.
    write_old_config(h, url, "10s");
    ASSERT_EQ(check_config(old, h.config), "") << "v0.1.0 refuses the config it is given";
    ASSERT_EQ(check_config(now, h.config), "") << "this dedupd refuses v0.1.0's config";
    members.push_back({&h, &old, false});
  }
  for (Member& m : members) ASSERT_NO_FATAL_FAILURE(start_member(m, old));
  ASSERT_NO_FATAL_FAILURE(publish_and_answer(admin, "three hosts on v0.1.0"));
  EXPECT_EQ(schema_row(admin).find("applied"), std::string::npos) << "v0.1.0 made " << schema_row(admin);

  // One at a time, each on its own state dir.
  for (std::size_t i = 0; i < members.size(); ++i) {
    Member& m = members[i];
    const std::string when = m.host->name + " upgraded";
    ASSERT_NO_FATAL_FAILURE(restart_in_place(admin, m, now, when));
    ASSERT_NO_FATAL_FAILURE(publish_and_answer(admin, when));
    // The first host of this build migrated the schema, additively: v0.1.0
    // reads only `version`, still 6.
    EXPECT_EQ(admin.one("SELECT applied FROM dedupd.schema_version"), std::to_string(fleet::known_schema_version()));
    std::string expected;
    for (std::size_t j = 0; j < members.size(); ++j)
      expected += members[j].host->name + "=" + (j <= i ? release : "-") + " ";
    expected += i + 1 < members.size() ? "mid-upgrade" : "one release";
    EXPECT_EQ(fleet_versions(m), expected) << when;
  }

  // A rollback: host-2 on v0.1.0 again, on the state dir this build wrote.
  Member& back = members[1];
  ASSERT_NO_FATAL_FAILURE(restart_in_place(admin, back, old, "host-2 rolled back"));
  ASSERT_NO_FATAL_FAILURE(publish_and_answer(admin, "host-2 rolled back"));
  // v0.1.0 does not write the host table's `version` (schema 7): the one its
  // newer release wrote stays, and the fleet's status cannot tell the
  // rollback (docs/OPERATIONS.md says so, and how to clear it).
  EXPECT_EQ(fleet_versions(members[0]),
            "host-1=" + release + " host-2=" + release + " host-3=" + release + " one release");
  ASSERT_EQ(admin.try_exec("UPDATE dedupd.host SET version = NULL WHERE name = 'host-2'"), "");
  EXPECT_TRUE(eventually([&] {
    return fleet_versions(members[0]) == "host-1=" + release + " host-2=- host-3=" + release + " mid-upgrade";
  })) << fleet_versions(members[0]);
  ASSERT_NO_FATAL_FAILURE(publish_and_answer(admin, "host-2 on v0.1.0, its version cleared"));
  EXPECT_EQ(admin.one("SELECT coalesce(version, 'null') FROM dedupd.host WHERE name = 'host-2'"), "null")
      << "v0.1.0 wrote a version";

  for (Member& m : members) EXPECT_EQ(m.host->process.stop(), 0) << m.host->name;
}

}  // namespace
}  // namespace dedupd::compat
