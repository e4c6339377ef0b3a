// A rolling upgrade of a fleet (issue 61): the previous release's real
// dedupd (v0.1.0, tests/compat/build_release.sh) and this build's on one
// fleet database of a real PostgreSQL (the fleet_pg fixture), started in
// either order. Old first: it makes the schema at its version (6), and this
// dedupd migrates it when it joins; new first: v0.1.0 joins a schema this
// release made. Throughout, both publish (shards dropped into each one's
// watched dir while the other starts) and both answer streamed lookups,
// through either release's dedupctl, for the shards of either host; v0.1.0
// is never refused (fleet.schema_newer) and its outbox drains. At the end
// every shard is in the fleet once, held by the host it was dropped on.
// Tests wait for progress (what the fleet or a host answers), never for time.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
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

// The schema's shape: its tables' columns with their types, its indexes,
// and the version row without its time.
std::string schema_shape(Admin& admin) {
  if (admin.one("SELECT to_regclass('dedupd.schema_version') IS NOT NULL") != "t") return "(no schema)";
  return admin.one(
             "SELECT string_agg(table_name || '.' || column_name || ' ' || data_type, ', ' ORDER BY "
             "table_name, column_name) FROM information_schema.columns WHERE table_schema = 'dedupd'") +
         "; indexes " +
         admin.one(
             "SELECT string_agg(indexname, ', ' ORDER BY indexname) FROM pg_indexes WHERE schemaname = "
             "'dedupd'") +
         "; " + admin.one("SELECT (to_jsonb(s) - 'upgraded_at')::text FROM dedupd.schema_version s");
}

// Drops a shard into each host it was given, one each `every`, from a thread
// of its own, until stop() or the destructor (however the test ends).
class Droppers {
 public:
  explicit Droppers(std::chrono::milliseconds every)
      : thread_([this, every] {
          while (on_) {
            {
              std::lock_guard lock(mu_);
              for (auto& [host, seed] : hosts_) host->drop(seed++);
            }
            std::this_thread::sleep_for(every);
          }
        }) {}
  ~Droppers() { stop(); }
  Droppers(const Droppers&) = delete;
  Droppers& operator=(const Droppers&) = delete;
  void add(FleetHost& h, std::uint64_t first_seed) {
    std::lock_guard lock(mu_);
    hosts_.emplace_back(&h, first_seed);
  }
  void stop() {
    on_ = false;
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::mutex mu_;
  std::vector<std::pair<FleetHost*, std::uint64_t>> hosts_;
  std::atomic<bool> on_{true};
  std::thread thread_;
};

enum class Order { old_first, new_first };

class RollingUpgrade : public itest::FleetHostsTest, public ::testing::WithParamInterface<Order> {
 protected:
  RollingUpgrade() : FleetHostsTest("compat-fleet") {}

  // Every shard the fleet holds now is answered by every running member
  // (its own from its index, the others' from the fleet with their holder),
  // v0.1.0 is not refused, and the schema is still one v0.1.0 uses.
  std::size_t expect_answered(Admin& admin, const std::string& when) {
    const std::size_t n = compat::expect_answered(admin, members, when);
    expect_old_not_refused(members[old_at], when);
    EXPECT_EQ(fleet_schema_version(admin), kOldFleetSchema) << when << ": " << schema_row(admin);
    return n;
  }

  std::vector<Member> members;  // [0] starts first
  std::size_t old_at = 0;       // which member is v0.1.0
};

// Both publish and answer each other's shards; every shard ends up in the
// fleet once. (A short name: the test's database is named after it, within
// PostgreSQL's 63 characters, and the two orders must not share one.)
TEST_P(RollingUpgrade, TwoReleasesOnOneFleet) {
  const Release& old = old_release();
  const Release& now = new_release();
  Cluster& pg = Cluster::shared();
  const std::string url = pg.primary_url(pg.new_database());
  Admin admin(url);

  FleetHost& old_host = keep(std::make_unique<FleetHost>(root, "old-host"));
  FleetHost& new_host = keep(std::make_unique<FleetHost>(root, "new-host"));
  // Lookups bounded generously: under a sanitizer on a busy machine a
  // lookup can take a while, and "unavailable" is not what is tested here.
  write_old_config(old_host, url, "10s");
  new_host.write_config(url, {.lookup_timeout = "10s", .fleet_extra = "", .log_level = "debug", .extra = ""});
  ASSERT_EQ(check_config(old, old_host.config), "") << "v0.1.0 refuses the config it is given";
  ASSERT_EQ(check_config(now, new_host.config), "");

  // What this build makes of an empty database (--fleet-migrate, in a
  // scratch one): the schema it must have migrated v0.1.0's to once it ran.
  std::string reference;
  {
    const std::string scratch = "t_compat_reference_" + std::string(GetParam() == Order::old_first ? "old" : "new");
    Admin server(pg.primary_url("postgres"));
    server.try_exec("DROP DATABASE IF EXISTS " + scratch + " WITH (FORCE)");
    ASSERT_EQ(server.try_exec("CREATE DATABASE " + scratch), "");
    FleetHost maker(root, "reference");
    maker.write_config(pg.primary_url(scratch));
    itest::ProgramRun made =
        itest::run_shell("'" + now.dedupd + "' --config '" + maker.config.string() + "' --fleet-migrate 2>&1");
    {
      Admin made_db(pg.primary_url(scratch));
      reference = schema_shape(made_db);
    }
    EXPECT_EQ(server.try_exec("DROP DATABASE " + scratch + " WITH (FORCE)"), "");
    ASSERT_EQ(made.code, 0) << made.out;
  }

  const bool old_first = GetParam() == Order::old_first;
  members = old_first ? std::vector<Member>{{&old_host, &old, false}, {&new_host, &now, false}}
                      : std::vector<Member>{{&new_host, &now, false}, {&old_host, &old, false}};
  old_at = old_first ? 0 : 1;
  Member& first = members[0];
  Member& second = members[1];

  // The first host alone: it makes the schema at its version and publishes.
  ASSERT_NO_FATAL_FAILURE(start_host(*first.host, *first.release));
  first.running = true;
  Droppers droppers(std::chrono::milliseconds(150));
  droppers.add(*first.host, old_first ? 10'000 : 20'000);
  ASSERT_TRUE(published_at_least(admin, members, first, 3)) << first.host->log_text();
  EXPECT_EQ(fleet_schema_version(admin), kOldFleetSchema)
      << first.release->name << " made a schema v0.1.0 cannot use: " << schema_row(admin);
  const std::string first_row = schema_row(admin);
  const std::string first_shape = schema_shape(admin);
  if (!old_first) {
    EXPECT_EQ(first_shape, reference);
  }
  expect_answered(admin, first.release->name + " alone");

  // The second joins while the first goes on publishing: the new one
  // migrates what v0.1.0 made, or v0.1.0 takes what the new one made.
  const std::size_t first_before = published(admin, members).size();
  ASSERT_NO_FATAL_FAILURE(start_host(*second.host, *second.release));
  second.running = true;
  droppers.add(*second.host, old_first ? 20'000 : 10'000);

  // Both publishing: each round waits for more of each one's shards, then
  // asks both hosts for everything the fleet holds.
  for (std::size_t round = 1; round <= 3; ++round) {
    ASSERT_TRUE(published_at_least(admin, members, first, first_before + 3 * round)) << first.host->log_text();
    ASSERT_TRUE(published_at_least(admin, members, second, 3 * round)) << second.host->log_text();
    // This build has published: it migrated v0.1.0's schema as far as it
    // makes one (old first), and v0.1.0 changed nothing of its (new first).
    EXPECT_EQ(schema_shape(admin), reference) << "round " << round << "; the first host alone made " << first_shape;
    expect_answered(admin, "both publishing, round " + std::to_string(round));
  }
  droppers.stop();
  std::printf("dedupd.schema_version: %s after %s alone, %s with both (v0.1.0 knows %d, this build %u)\n",
              first_row.c_str(), first.release->name.c_str(), schema_row(admin).c_str(), kOldFleetSchema,
              unsigned(fleet::known_schema_version()));

  // Every shard dropped is in the fleet once, held by its host, and both
  // outboxes are empty.
  std::set<std::string> every;
  std::size_t old_shards = 0, new_shards = 0;
  for (const Member& m : members)
    for (const MadeShard& s : m.host->dropped()) {
      every.insert(hold_of(*m.host, s));
      ++(m.host == &old_host ? old_shards : new_shards);
    }
  ASSERT_TRUE(eventually([&] { return fleet_holds(admin) == every; }, std::chrono::seconds(120)))
      << every.size() << " shards dropped, the fleet holds " << fleet_holds(admin).size();
  for (Member& m : members)
    EXPECT_TRUE(eventually([&] { return m.host->outbox_depth() == 0; }))
        << m.host->name << ": " << m.host->fleet_link();
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.shard"), std::to_string(every.size()));
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.hold"), std::to_string(every.size()));
  EXPECT_EQ(admin.one("SELECT count(DISTINCT hash) FROM dedupd.shard"), std::to_string(every.size()));
  auto holds_of = [&](const std::string& name) {
    return admin.one("SELECT count(*) FROM dedupd.hold h JOIN dedupd.host o ON o.id = h.host_id WHERE o.name = '" +
                     name + "'");
  };
  EXPECT_EQ(holds_of(old_host.name), std::to_string(old_shards));
  EXPECT_EQ(holds_of(new_host.name), std::to_string(new_shards));
  EXPECT_EQ(old_host.fleet_link()["outbox"]["parked"], 0) << old_host.fleet_link();
  EXPECT_EQ(old_host.fleet_link()["state"], "connected") << old_host.fleet_link();
  EXPECT_EQ(expect_answered(admin, "at the end"), every.size());
  std::printf("%zu shards in the fleet: %zu from v0.1.0, %zu from this build\n", every.size(), old_shards, new_shards);

  // Both stop cleanly.
  for (Member& m : members) EXPECT_EQ(m.host->process.stop(), 0) << m.host->name;
}

INSTANTIATE_TEST_SUITE_P(Orders, RollingUpgrade, ::testing::Values(Order::old_first, Order::new_first),
                         [](const ::testing::TestParamInfo<Order>& p) {
                           return p.param == Order::old_first ? std::string("OldFirst") : std::string("NewFirst");
                         });

}  // namespace
}  // namespace dedupd::compat
