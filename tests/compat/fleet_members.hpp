// Hosts of either release on one fleet, as the compat fleet tests see them:
// which release each runs, what the fleet holds for each, and whether every
// running host answers every shard (issues 61 and 74).
#pragma once

#include <chrono>
#include <cstddef>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compat_support.hpp"
#include "tests/unit/fleet/pg_support.hpp"

namespace dedupd::compat {

// One host of the fleet and the release it runs now (an in-place upgrade
// or rollback changes it).
struct Member {
  itest::FleetHost* host = nullptr;
  const Release* release = nullptr;
  bool running = false;
};

// Starts m's dedupd from release r on its config and state dir (in place
// of whatever ran there before), logging to a file of its own
// (dedupd-<n>.log; a failure prints the last one). Fails the test when it
// does not answer.
void start_member(Member& m, const Release& r);

// "host:shard hash", as fleet::test::fleet_holds lists a hold.
std::string hold_of(const itest::FleetHost& h, const itest::MadeShard& s);
// Every hold the members' dropped shards should make.
std::set<std::string> holds_dropped(const std::vector<Member>& members);

// The fleet's schema version as v0.1.0 reads it (dedupd.schema_version's
// `version`: its publisher and its lookups refuse any other than 6); 0
// before a host made the schema.
int fleet_schema_version(fleet::test::Admin& admin);
// The whole row, whatever columns this release added, for the log.
std::string schema_row(fleet::test::Admin& admin);

// The shards each member dropped that the fleet holds for it now.
std::vector<std::pair<const Member*, itest::MadeShard>> published(fleet::test::Admin& admin,
                                                                  const std::vector<Member>& members);
// Waits until the fleet holds at least `n` of m's shards.
bool published_at_least(fleet::test::Admin& admin, const std::vector<Member>& members, const Member& m, std::size_t n);

// Every running member answers, through the dedupctl of either release,
// every shard it dropped from its own index ("local"), and every shard the
// fleet holds for another member from the fleet, with that holder. Returns
// how many shards the fleet held.
std::size_t expect_answered(fleet::test::Admin& admin, const std::vector<Member>& members, const std::string& when);

// A member of v0.1.0 that is running was never refused for the fleet's
// schema, by its log or its status.
void expect_old_not_refused(Member& m, const std::string& when);

}  // namespace dedupd::compat
