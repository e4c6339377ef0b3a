// The verbs that show the daemon's state (cli/state_verbs): shards, stats,
// status and the Xet cache steward's status and plan, against a fake daemon
// answering the documented shapes (docs/API.md), for a person and as JSON.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "fake_daemon.hpp"
#include "support.hpp"

namespace dedupctl {
namespace {

using namespace testing::verb_test;
// Unordered, not dedupctl::json; under a name of its own, or a batch of
// several test files sees two json in dedupctl.
using Json = nlohmann::json;

Json stats_doc() {
  return {{"shards", {{"live", 1}, {"expired", 2}, {"removed", 0}, {"rejected", 1}}},
          {"xorbs", 3},
          {"chunks", 2117},
          {"files", 0},
          {"keys", 1},
          {"db_bytes", 1 << 20},
          {"map_size", 1 << 30},
          {"map_used", 1 << 28},
          {"next_expiry", nullptr}};
}

TEST(Shards, TableAndStateFilter) {
  Json doc = {{"shards", {shard_summary("live"), shard_summary("rejected")}}};
  auto d = daemon_with(
      {{"GET /v1/shards", http(200, doc.dump())}, {"GET /v1/shards?state=expired", http(200, R"({"shards":[]})")}});
  auto r = run_cli(with(d, {"shards"}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("SHARD"), std::string::npos);
  EXPECT_NE(r.out.find(kShard + "  live      "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[header.magic]"), std::string::npos) << r.out;
  auto e = run_cli(with(d, {"shards", "--expired"}));
  EXPECT_EQ(e.code, 0);
  EXPECT_EQ(e.out, "no shards in state expired\n");
  EXPECT_EQ(run_cli(with(d, {"shards", "--live", "--rejected"})).code, 64);
}

TEST(Stats, Fields) {
  auto d = daemon_with({{"GET /v1/stats", http(200, stats_doc().dump())}});
  auto r = run_cli(with(d, {"stats"}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Shards       1 live, 2 expired, 0 removed, 1 rejected"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Database     1.0 MiB on disk, map 256.0 MiB of 1.0 GiB used (25%)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Next expiry  none"), std::string::npos);
  EXPECT_EQ(Json::parse(run_cli(with(d, {"stats", "--json"})).out), stats_doc());
}

// The chunk filters' memory, per entry, against its bound, and what it buys.
TEST(Stats, ChunkFilter) {
  Json doc = stats_doc();
  doc["chunk_filter"] = {{"in_service", true},           {"bytes", 17'301'504},   {"max_bytes", 512u << 20},
                         {"capacity", 12'500'000},       {"entries", 10'000'000}, {"at_bound", false},
                         {"false_positive_rate", 0.0071}};
  auto d = daemon_with({{"GET /v1/stats", http(200, doc.dump())}});
  auto r = run_cli(with(d, {"stats"}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Chunk filter  16.5 MiB of 512.0 MiB (1.73 B an entry, 10,000,000 entries, room for "
                       "12,500,000); 0.7 % of absent forms searched\n"),
            std::string::npos)
      << r.out;
  doc["chunk_filter"]["at_bound"] = true;
  doc["chunk_filter"]["in_service"] = false;
  auto b = daemon_with({{"GET /v1/stats", http(200, doc.dump())}});
  r = run_cli(with(b, {"stats"}));
  EXPECT_NE(r.out.find("room for 12,500,000, at index.filter_memory); 0.7 % of absent forms searched; not in service"),
            std::string::npos)
      << r.out;
  doc["chunk_filter"]["bytes"] = 0;
  auto c = daemon_with({{"GET /v1/stats", http(200, doc.dump())}});
  EXPECT_NE(run_cli(with(c, {"stats"})).out.find("Chunk filter  none yet"), std::string::npos);
  EXPECT_EQ(Json::parse(run_cli(with(d, {"stats", "--json"})).out)["chunk_filter"]["bytes"], 17'301'504);
}

TEST(Status, UpAndCounts) {
  Json doc = {{"version", "0.1.0"},
              {"pid", 42},
              {"uptime_s", 93784},
              {"socket", "/run/dedupd/dedupd.sock"},
              {"state_dir", "/var/lib/dedupd"},
              {"watch", {"/home/u/.cache/huggingface/xet"}},
              {"stats", stats_doc()}};
  auto d = daemon_with({{"GET /v1/status", http(200, doc.dump())}});
  auto r = run_cli(with(d, {"status"}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("dedupd       running, version 0.1.0, pid 42, up 1d 2h 3m"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Watching     /home/u/.cache/huggingface/xet"), std::string::npos) << r.out;
  Json bad = doc;
  bad["stats"].erase("chunks");
  auto b = daemon_with({{"GET /v1/status", http(200, bad.dump())}});
  EXPECT_EQ(run_cli(with(b, {"status"})).code, 76);
}

// Issue 30: what the steward decided and why, per cache, for a person and
// as JSON.
TEST(XetCache, StatusSaysWhyItHoldsBack) {
  Json cache = {{"endpoint", "/home/u/.cache/huggingface/xet/hub"},
                {"files", 46},
                {"files_before", 708},
                {"bytes", 1 << 20},
                {"bytes_before", 3 << 20},
                {"max_bytes", 16000000000ull},
                {"chunk_entries", 4000},
                {"max_chunk_entries", 67108864},
                {"merges", 3},
                {"merged_away", 60},
                {"evicted", 0},
                {"pending_deletions", 2},
                {"pending_bytes", 4096},
                {"live_clients", 0},
                {"client_pids", Json::array()},
                {"liveness", {{"established", false}, {"why", "no logs/ directory"}}},
                {"standing_by", false},
                {"lock_holder", ""},
                {"set_aside", {"group:a;b;: xetcache.write: No space left on device (again in 60 s)"}},
                {"holds_removed", Json::array()},
                {"removed_kept", 1},
                {"last_pass", 0},
                {"problem", ""}};
  Json other = {{"endpoint", "/srv/xet"}, {"standing_by", true}, {"lock_holder", "pid 7 on b"}};
  Json doc = {{"version", "0.1.0"}, {"xet_caches", {cache, other}}};
  auto d = daemon_with({{"GET /v1/status", http(200, doc.dump())}});
  auto r = run_cli(with(d, {"xet-cache", "status"}));
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* want :
       {"708 -> 46", "2 originals, 4.0 KiB", "unknown, all count as alive: no logs/ directory",
        "No space left on device", "standing by: pid 7 on b stewards it", "1 files of removed shards"})
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
  auto j = run_cli(with(d, {"--json", "xet-cache", "status"}));
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_EQ(Json::parse(j.out)["xet_caches"].size(), 2u);
}

TEST(XetCache, PlanListsTheStepsAndAsksForOneRoot) {
  Json plan = {{"xet_caches",
                {{{"endpoint", "/c/hub"},
                  {"liveness", {{"established", true}, {"why", "0 live client(s) of 3 logged"}}},
                  {"standing_by", false},
                  {"lock_holder", ""},
                  {"steps",
                   {{{"action", "merge"},
                     {"files", {"/c/hub/shard-cache/a.mdb", "/c/hub/shard-cache/b.mdb"}},
                     {"why", "2 small shards of one kind, key and expiry day into /c/hub/shard-cache/m.mdb"},
                     {"bytes_saved", 1024},
                     {"entries_saved", 7}}}},
                  {"set_aside", Json::array()}}}}};
  auto d = daemon_with({{"GET /v1/xet-cache/plan?root=/c%20x", http(200, plan.dump())},
                        {"GET /v1/xet-cache/plan", http(200, plan.dump())}});
  auto r = run_cli(with(d, {"xet-cache", "plan", "/c x"}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("merge"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1.0 KiB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0 live client(s) of 3 logged"), std::string::npos) << r.out;
  auto all = run_cli(with(d, {"--json", "xet-cache", "plan"}));
  ASSERT_EQ(all.code, 0) << all.err;
  EXPECT_EQ(Json::parse(all.out), plan);
}

TEST(Shards, RejectedFileWithUnknownHash) {
  Json rejected = shard_summary("rejected");
  rejected["hash"] = nullptr;
  rejected["created"] = nullptr;
  rejected["expiry"] = nullptr;
  auto d = daemon_with({{"GET /v1/shards?state=rejected", http(200, Json({{"shards", {rejected}}}).dump())}});
  auto r = run_cli(with(d, {"shards", "--rejected"}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("-      rejected"), std::string::npos) << r.out;
}

TEST(Status, StartingIs69) {
  Json doc = {{"version", "0.1.0"}, {"pid", 42}, {"uptime_s", 1}, {"ready", false}, {"stats", nullptr}};
  auto d = daemon_with({{"GET /v1/status", http(200, doc.dump())}});
  auto r = run_cli(with(d, {"status"}));
  EXPECT_EQ(r.code, 69) << r.err;
  EXPECT_NE(r.out.find("starting (index not open yet)"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace dedupctl
