// v0.1.0 beside the fleet's set-aside marks (schema 7, issue 58), which it
// does not know (issue 74): what docs/FLEET.md ("Set aside once, for the
// whole fleet") and docs/OPERATIONS.md ("A fleet, one host at a time") say
// of a fleet mid-upgrade. Two hosts of this build and one of v0.1.0's real
// dedupd (tests/compat/build_release.sh) on one fleet database of a real
// PostgreSQL, all of one CAS; what the endpoint's nginx sends is sent by
// hand (harness/endpoint_requests.hpp). Tests wait for progress, never for
// time: a host of this build that has applied the marks is the witness that
// they were there to be read.
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compat_support.hpp"
#include "fleet_members.hpp"
#include "harness/endpoint_requests.hpp"
#include "harness/eventually.hpp"
#include "harness/fleet_host.hpp"
#include "harness/make_shard.hpp"
#include "tests/unit/fleet/pg_support.hpp"

namespace dedupd::compat {
namespace {

using fleet::test::Admin;
using fleet::test::Cluster;
using fleet::test::fleet_holds;
using itest::drop_file;
using itest::eventually;
using itest::FleetHost;
using itest::MadeShard;
using itest::make_shard;
using itest::refuse_upload_relying_on;
using itest::status_and_fleet_header;
using nlohmann::json;

const std::string kCas = "https://cas-a.example";

// A global-dedup query for a chunk of `s`, as the endpoint of kCas asks it:
// the status, and where it was answered ("local", or "fleet" when the fleet
// answered it; "fleet unavailable" when the fleet was asked and did not).
std::pair<int, std::string> global_dedup(const FleetHost& h, const MadeShard& s) {
  auto [status, fleet] =
      status_and_fleet_header(h, "/v1/chunks/default/" + s.raw_chunks[1].to_string(), "X-Dedupd-Cas: " + kCas);
  if (fleet.empty()) return {status, "local"};
  return {status, fleet == "ok" ? "fleet" : "fleet " + fleet};
}

const std::pair<int, std::string> kFromIndex{200, "local"}, kFromFleet{200, "fleet"}, kNowhere{404, "fleet"};

class SetAsideMarks : public itest::FleetHostsTest {
 protected:
  SetAsideMarks() : FleetHostsTest("compat-marks") {}

  FleetHost& add_host(const std::string& name, const std::string& url, const Release& r) {
    FleetHost& h = keep(std::make_unique<FleetHost>(root, name));
    h.incoming_cas = kCas;
    // Learning is on with an endpoint configured (its settings file need
    // not exist). Lookups bounded generously: under a sanitizer on a busy
    // machine one can take a while, and "unavailable" is not tested here.
    h.write_config(url, {.lookup_timeout = "10s",
                         .fleet_extra = "xet_endpoint:\n  config: " + (h.dir / "xet-endpoint.conf").string() + "\n",
                         .log_level = "debug",
                         .extra = ""});
    EXPECT_EQ(check_config(r, h.config), "") << r.name << " refuses the config it is given";
    members.push_back({&h, &r, false});
    EXPECT_NO_FATAL_FAILURE(start_member(members.back(), r));
    return h;
  }

  void drop(FleetHost& h, const MadeShard& s) { drop_file(h.incoming, s.file_name(), s.bytes); }

  // The shard's summary on h: its set_aside ({at, reason}, or null).
  json set_aside_on(FleetHost& h, const MadeShard& s) {
    return h.http().get("/v1/shard/" + s.file_hash.to_string()).json()["set_aside"];
  }

  // dedupd.set_aside holds a mark for kCas by `by` on each of `shards`, and
  // nothing else.
  void expect_marks(Admin& admin, const std::vector<const MadeShard*>& shards, const FleetHost& by,
                    const std::string& when) {
    std::set<std::string> want;
    for (const MadeShard* s : shards) want.insert(s->file_hash.to_hex_bytes() + " " + kCas + " " + by.name);
    std::string expected;
    for (const std::string& m : want) expected += (expected.empty() ? "" : ", ") + m;
    EXPECT_EQ(admin.one("SELECT string_agg(encode(m.shard, 'hex') || ' ' || m.cas || ' ' || h.name, ', ' ORDER BY "
                        "encode(m.shard, 'hex')) FROM dedupd.set_aside m JOIN dedupd.host h ON h.id = m.host_id"),
              expected)
        << when;
  }

  std::vector<Member> members;
};

TEST_F(SetAsideMarks, AnOldHostNeitherReadsNorWritesThemAndGoesOnPublishing) {
  const Release& old = old_release();
  const Release& now = new_release();
  Cluster& pg = Cluster::shared();
  const std::string url = pg.primary_url(pg.new_database());
  Admin admin(url);
  FleetHost& marker = add_host("host-new", url, now);  // sees the refusals
  FleetHost& witness = add_host("host-new-2", url, now);
  FleetHost& old_host = add_host("host-old", url, old);
  ASSERT_FALSE(HasFailure());

  // `both`: a copy on every host; `fleet_only`: on the marker alone, the
  // others answer it from the fleet; `olds`: on v0.1.0 alone.
  const MadeShard both = make_shard({.seed = 7401, .xorbs = 2, .chunks_per_xorb = 4});
  const MadeShard fleet_only = make_shard({.seed = 7402, .xorbs = 2, .chunks_per_xorb = 4});
  const MadeShard olds = make_shard({.seed = 7403, .xorbs = 2, .chunks_per_xorb = 4});
  for (FleetHost* h : {&marker, &witness, &old_host}) drop(*h, both);
  drop(marker, fleet_only);
  drop(old_host, olds);
  auto everyone_answers = [&] {
    return global_dedup(marker, both) == kFromIndex && global_dedup(witness, both) == kFromIndex &&
           global_dedup(old_host, both) == kFromIndex && global_dedup(witness, fleet_only) == kFromFleet &&
           global_dedup(old_host, fleet_only) == kFromFleet && global_dedup(marker, olds) == kFromFleet &&
           global_dedup(old_host, olds) == kFromIndex;
  };
  ASSERT_TRUE(eventually(everyone_answers, std::chrono::seconds(120)))
      << "before any refusal: " << global_dedup(old_host, fleet_only).first << " " << global_dedup(marker, olds).first;

  // This build's marks: the marker's CAS refused uploads relying on `both`
  // and on `fleet_only`. The marker sets its copies aside and marks them.
  refuse_upload_relying_on(marker, both, kCas, "0123456789abcdef0123456789ab7401");
  refuse_upload_relying_on(marker, fleet_only, kCas, "0123456789abcdef0123456789ab7402");
  ASSERT_TRUE(eventually([&] { return admin.one("SELECT count(*) FROM dedupd.set_aside") == "2"; }))
      << marker.log_text();
  // The witness, of this build, reads them: it sets its own copy aside and
  // leaves the marked shard out of what the fleet answers.
  ASSERT_TRUE(eventually([&] {
    return global_dedup(witness, both) == kNowhere && global_dedup(witness, fleet_only) == kNowhere;
  })) << witness.log_text();
  EXPECT_EQ(global_dedup(marker, both), kNowhere);
  EXPECT_EQ(global_dedup(marker, fleet_only), kNowhere);
  EXPECT_TRUE(set_aside_on(witness, both).is_object()) << set_aside_on(witness, both);

  // v0.1.0 reads none of them: it answers with both marked shards, its own
  // copy from its index (not set aside) and the other from the fleet.
  EXPECT_EQ(global_dedup(old_host, both), kFromIndex);
  EXPECT_EQ(global_dedup(old_host, fleet_only), kFromFleet);
  EXPECT_TRUE(set_aside_on(old_host, both).is_null()) << set_aside_on(old_host, both);
  EXPECT_EQ(old_host.status()["xet_endpoint"]["learning"]["set_aside"], 0);

  // Its own CAS's refusals set aside its own copy and nothing else: no
  // mark, so the other hosts go on answering with it. A refusal relying on
  // a shard it has only from the fleet sets nothing aside: it goes on
  // answering with that one too.
  refuse_upload_relying_on(old_host, olds, kCas, "0123456789abcdef0123456789ab7403");
  refuse_upload_relying_on(old_host, fleet_only, kCas, "0123456789abcdef0123456789ab7404");
  // Both refusals dealt with: v0.1.0 logs each once it has set aside what
  // it would.
  ASSERT_TRUE(eventually([&] {
    const std::string log = old_host.log_text();
    return log.find("(request 0123456789abcdef0123456789ab7403)") != std::string::npos &&
           log.find("(request 0123456789abcdef0123456789ab7404)") != std::string::npos;
  })) << old_host.log_text();
  EXPECT_EQ(global_dedup(old_host, olds), kNowhere);
  EXPECT_TRUE(set_aside_on(old_host, olds).is_object()) << set_aside_on(old_host, olds);
  EXPECT_EQ(old_host.status()["xet_endpoint"]["learning"]["set_aside"], 1);
  EXPECT_EQ(global_dedup(old_host, fleet_only), kFromFleet);

  // And it goes on publishing, never refused for the schema: a shard it
  // takes in after its refusals reaches the fleet, and the marks are still
  // the two of this build (none for `olds`).
  const MadeShard later = make_shard({.seed = 7405, .xorbs = 1, .chunks_per_xorb = 3});
  drop(old_host, later);
  ASSERT_TRUE(eventually([&] { return fleet_holds(admin).count(hold_of(old_host, later)) == 1; }))
      << old_host.log_text();
  EXPECT_EQ(global_dedup(marker, later), kFromFleet);
  EXPECT_EQ(global_dedup(marker, olds), kFromFleet);
  EXPECT_EQ(global_dedup(witness, olds), kFromFleet);
  expect_marks(admin, {&both, &fleet_only}, marker, "after v0.1.0's refusals");

  // A host of this build marks a shard it has only from the fleet (here
  // v0.1.0's): its answers came from the fleet, so the fleet's shards
  // holding the xorbs the refused upload relied on are marked, and no host
  // of this build answers with them for that CAS any more. v0.1.0 reads no
  // marks: it goes on answering with its own copy.
  refuse_upload_relying_on(marker, olds, kCas, "0123456789abcdef0123456789ab7406");
  ASSERT_TRUE(eventually([&] {
    return marker.log_text().find("(request 0123456789abcdef0123456789ab7406)") != std::string::npos;
  })) << marker.log_text();
  ASSERT_TRUE(eventually([&] {
    return global_dedup(marker, olds) == kNowhere && global_dedup(witness, olds) == kNowhere;
  })) << marker.log_text()
      << witness.log_text();
  expect_marks(admin, {&both, &fleet_only, &olds}, marker, "after this build's refusal relying on v0.1.0's shard");
  EXPECT_EQ(global_dedup(old_host, olds), kNowhere);  // set aside by its own refusal above
  for (Member& m : members) expect_old_not_refused(m, "beside the marks");

  for (Member& m : members) EXPECT_EQ(m.host->process.stop(), 0) << m.host->name;
}

}  // namespace
}  // namespace dedupd::compat
