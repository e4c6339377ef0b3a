#include "fleet_members.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "harness/eventually.hpp"
#include "harness/fleet_host.hpp"

namespace dedupd::compat {

using fleet::test::Admin;
using fleet::test::fleet_holds;
using itest::eventually;
using itest::MadeShard;
using nlohmann::json;

void start_member(Member& m, const Release& r) {
  static std::atomic<int> starts{0};
  m.host->log = m.host->dir / ("dedupd-" + std::to_string(++starts) + ".log");
  m.release = &r;
  ASSERT_NO_FATAL_FAILURE(start_host(*m.host, r));
  m.running = true;
}

std::string hold_of(const itest::FleetHost& h, const MadeShard& s) { return h.name + ":" + s.file_hash.to_hex_bytes(); }

std::set<std::string> holds_dropped(const std::vector<Member>& members) {
  std::set<std::string> out;
  for (const Member& m : members)
    for (const MadeShard& s : m.host->dropped()) out.insert(hold_of(*m.host, s));
  return out;
}

int fleet_schema_version(Admin& admin) {
  if (admin.one("SELECT to_regclass('dedupd.schema_version') IS NOT NULL") != "t") return 0;
  return std::atoi(admin.one("SELECT version FROM dedupd.schema_version").c_str());
}

std::string schema_row(Admin& admin) {
  if (admin.one("SELECT to_regclass('dedupd.schema_version') IS NOT NULL") != "t") return "(no schema)";
  return admin.one("SELECT row_to_json(s)::text FROM dedupd.schema_version s");
}

std::vector<std::pair<const Member*, MadeShard>> published(Admin& admin, const std::vector<Member>& members) {
  const std::set<std::string> holds = fleet_holds(admin);
  std::vector<std::pair<const Member*, MadeShard>> out;
  for (const Member& m : members)
    for (MadeShard& s : m.host->dropped())
      if (holds.count(hold_of(*m.host, s))) out.emplace_back(&m, std::move(s));
  return out;
}

bool published_at_least(Admin& admin, const std::vector<Member>& members, const Member& m, std::size_t n) {
  return eventually(
      [&] {
        auto all = published(admin, members);
        return std::size_t(std::count_if(all.begin(), all.end(), [&](const auto& p) { return p.first == &m; })) >= n;
      },
      std::chrono::seconds(120));
}

std::size_t expect_answered(Admin& admin, const std::vector<Member>& members, const std::string& when) {
  const auto shards = published(admin, members);
  for (const Member& asked : members) {
    if (!asked.running) continue;
    std::vector<Expected> want;
    // Its own, published or not: what its index holds.
    for (const MadeShard& s : asked.host->dropped()) add_expected(want, s, "local", asked.host->name);
    for (const auto& [holder, s] : shards)
      if (holder != &asked) add_expected(want, s, "fleet", holder->host->name);
    for (const Release* ctl : {&old_release(), &new_release()}) {
      StreamAnswer last;
      EXPECT_TRUE(eventually(
          [&] { return (last = stream_query(*ctl, asked.host->socket, want, asked.host->dir)).all_right(want.size()); },
          std::chrono::seconds(60)))
          << when << ": " << asked.host->name << " (" << asked.release->name << ") through " << ctl->name
          << "'s dedupctl, " << shards.size() << " shards in the fleet: " << last.describe();
    }
  }
  return shards.size();
}

void expect_old_not_refused(Member& m, const std::string& when) {
  if (!m.running || m.release != &old_release()) return;
  const std::string log = m.host->log_text();
  // ("fleet.schema" alone is no refusal: a lookup before any host made the
  // schema says so.)
  for (const char* refusal : {"fleet.schema_newer", "newer than version"})
    EXPECT_EQ(log.find(refusal), std::string::npos)
        << when << ": " << m.host->name << " (v0.1.0)'s log says \"" << refusal << "\"";
  const json link = m.host->fleet_link();
  const std::string error = link["last_error"].is_string() ? link["last_error"].get<std::string>() : "";
  EXPECT_EQ(error.find("newer"), std::string::npos)
      << when << ": " << m.host->name << " (v0.1.0)'s fleet status: " << link.dump();
}

}  // namespace dedupd::compat
