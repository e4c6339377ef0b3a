// Three real dedupd processes sharing one fleet index on a real PostgreSQL
// (the fleet_pg ctest fixture, or a private cluster for tests that stop or
// promote servers). Each host has its own state dir, socket and watched dir;
// tests wait for progress (what the fleet or a host answers), never for time.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "fleet/key_filters_file.hpp"
#include "harness/daemon_process.hpp"
#include "harness/daemon_test.hpp"
#include "harness/damaged_record.hpp"
#include "harness/endpoint_requests.hpp"
#include "harness/eventually.hpp"
#include "harness/fleet_host.hpp"
#include "harness/http_client.hpp"
#include "harness/make_shard.hpp"
#include "harness/program_run.hpp"
#include "harness/silent_server.hpp"
#include "shard/keys.hpp"
#include "shard/reader.hpp"
#include "shard/writer.hpp"
#include "tests/support/text_file.hpp"
#include "tests/unit/fleet/pg_support.hpp"
#include "tests/unit/index/gen.hpp"

namespace dedupd::itest {
namespace {

namespace fs = std::filesystem;
using fleet::test::Admin;
using fleet::test::Cluster;
using fleet::test::fleet_holds;
using nlohmann::json;

// One dedupd of the fleet.
using Host = FleetHost;

std::string dedupctl_binary() { return DEDUPCTL_BINARY; }

// Runs dedupctl; returns its exit code and stdout.
int dedupctl(const Host& h, const std::vector<std::string>& args, std::string* out = nullptr,
             std::string* err = nullptr) {
  std::string cmd = dedupctl_binary() + " --socket " + h.socket.string();
  for (const auto& a : args) cmd += " '" + a + "'";
  fs::path err_file = h.dir / "dedupctl.err";
  cmd += " 2>" + err_file.string();
  ProgramRun r = run_shell(cmd);
  if (out) *out = r.out;
  if (err) *err = tests::file_text(err_file);
  return r.code;
}

// The holders the fleet names for a chunk this host does not have locally.
std::optional<std::set<std::string>> fleet_holders(Host& h, const shard::Hash& chunk) {
  auto r = h.http().get("/v1/chunk/" + chunk.to_string());
  if (r.status != 200) return std::nullopt;
  json doc = r.json();
  std::set<std::string> holders;
  for (const auto& loc : doc["locations"]) {
    if (loc["origin"] != "fleet") continue;
    for (const auto& s : loc["shards"])
      for (const auto& host : s["holders"]) holders.insert(host.get<std::string>());
  }
  if (holders.empty()) return std::nullopt;
  return holders;
}

// A global-dedup reply holds `xorb` with `raw_chunk` keyed under the footer key.
void expect_reply_answers(const std::string& body, const shard::Hash& xorb, const shard::Hash& raw_chunk) {
  auto view = shard::ShardView::parse({reinterpret_cast<const std::uint8_t*>(body.data()), body.size()});
  ASSERT_TRUE(view.ok()) << view.error().to_string();
  EXPECT_TRUE(view->keyed());
  EXPECT_TRUE(view->expiry().has_value());
  shard::Hash keyed = shard::keyed_chunk_hash(view->chunk_key(), raw_chunk);
  bool xorb_found = false, chunk_found = false;
  for (auto x : view->xorbs()) {
    if (x.hash() != xorb) continue;
    xorb_found = true;
    for (std::size_t i = 0; i < x.num_chunks(); ++i) chunk_found |= x.chunk(i).chunk_hash == keyed;
  }
  EXPECT_TRUE(xorb_found) << "the chunk's xorb is not in the reply";
  EXPECT_TRUE(chunk_found) << "the chunk is not keyed under the reply's key";
}

// The xorbs of a global-dedup reply, in its order.
std::vector<shard::Hash> reply_xorbs(const std::string& body) {
  std::vector<shard::Hash> out;
  auto view = shard::ShardView::parse({reinterpret_cast<const std::uint8_t*>(body.data()), body.size()});
  if (view.ok())
    for (auto x : view->xorbs()) out.push_back(x.hash());
  return out;
}

// The shard with the empty file (hash zero, no terms) added last, carrying
// the verification flag the other files have: the shape the JavaScript
// client and xet-core write, and the one releases before schema 3 could not
// rebuild.
MadeShard with_empty_file(MadeShard s) {
  auto view = shard::ShardView::parse(s.bytes);
  if (!view) throw std::runtime_error(view.error().to_string());
  shard::ShardWriter w = shard::ShardWriter::from_view(*view);
  shard::FileRecord empty;
  empty.header.flags = shard::kFileFlagWithVerification;
  w.add_file(empty);
  s.bytes = w.write(shard::ShardWriter::options_of(*view));
  s.file_hash = shard::shard_file_hash(s.bytes);
  return s;
}

std::string hold_of(const std::string& host, const shard::Hash& shard) { return host + ":" + shard.to_hex_bytes(); }

int run(const std::string& cmd) {
  int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// Requests sent at once, each on its own connection, answered in any order.
class Concurrent {
 public:
  explicit Concurrent(const fs::path& socket) : socket_(socket) {}
  ~Concurrent() {
    for (auto& t : threads_) t.join();
  }
  void get(const std::string& path) {
    threads_.emplace_back([this, path] {
      HttpClient client(socket_.string());
      Response r = client.get(path);
      std::lock_guard lock(mu_);
      answers_.push_back(std::move(r));
    });
  }
  std::vector<Response> answers() {
    std::lock_guard lock(mu_);
    return answers_;
  }
  void join() {
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

 private:
  fs::path socket_;
  std::mutex mu_;
  std::vector<Response> answers_;
  std::vector<std::thread> threads_;
};

class Fleet : public FleetHostsTest {
 protected:
  Fleet() : FleetHostsTest("fleet-it") {}
  Host& add_host(const std::string& name, const std::string& url, const std::string& lookup_timeout = "200ms",
                 const std::string& fleet_extra = "") {
    Host& h = keep(std::make_unique<Host>(root, name));
    FleetConfig config;  // (set one by one: g++ 12 warns of fields a designated list leaves out)
    config.lookup_timeout = lookup_timeout;
    config.fleet_extra = fleet_extra;
    h.write_config(url, config);
    return h;
  }
  // Started on the fleet at `url`, each taking its shards from `cas`
  // through a local Xet endpoint, with debug logs.
  std::vector<Host*> start_endpoint_hosts(const std::string& url, const std::string& cas,
                                          std::initializer_list<const char*> names) {
    std::vector<Host*> started;
    for (const char* name : names) {
      Host& h = add_host(name, url);
      h.incoming_cas = cas;
      h.write_config(url, {.lookup_timeout = "200ms",
                           .fleet_extra = "xet_endpoint:\n  config: " + (h.dir / "xet-endpoint.conf").string() + "\n",
                           .log_level = "debug",
                           .extra = ""});
      h.start();
      started.push_back(&h);
    }
    return started;
  }
  // Started on a new database: A, which publishes, and B, whose key
  // filters have 8 MiB.
  std::pair<Host&, Host&> publisher_and_small_filters() {
    Cluster& pg = Cluster::shared();
    std::string url = pg.primary_url(pg.new_database());
    Host& a = add_host("host-a", url);
    Host& b = add_host("host-b", url, "200ms", "  key_filter_memory: 8M\n");
    a.start();
    b.start();
    return {a, b};
  }
};

TEST_F(Fleet, AShardDroppedOnAIsAnsweredOnBAndCWithItsHolders) {
  Cluster& pg = Cluster::shared();
  std::string url = pg.primary_url(pg.new_database());
  Host& a = add_host("host-a", url);
  Host& b = add_host("host-b", url);
  Host& c = add_host("host-c", url);
  for (Host* h : {&a, &b, &c}) h->start();

  MadeShard s = make_shard({.seed = 1301, .xorbs = 3, .chunks_per_xorb = 5});
  drop_file(a.incoming, s.file_name(), s.bytes);
  for (Host* h : {&b, &c})
    ASSERT_TRUE(eventually([&] { return fleet_holders(*h, s.first_chunks[1]) == std::set<std::string>{"host-a"}; }))
        << h->name << " never saw host-a's shard";
  // A answers from its own index, marked local.
  json local = a.http().get("/v1/chunk/" + s.first_chunks[0].to_string()).json();
  EXPECT_EQ(local["locations"][0]["origin"], "local");
  // dedupctl on C: found (exit 0) with origin fleet, holder host-a.
  std::string out, err;
  EXPECT_EQ(dedupctl(c, {"query", "--json", s.first_chunks[2].to_string()}, &out, &err), 0) << err;
  json doc = json::parse(out);
  EXPECT_EQ(doc["locations"][0]["origin"], "fleet");
  EXPECT_EQ(doc["locations"][0]["shards"][0]["holders"], json::array({"host-a"}));
  EXPECT_EQ(doc["locations"][0]["xorb"], s.xorbs[2].to_string());
  // --local-only leaves the fleet out: C itself has nothing.
  EXPECT_EQ(dedupctl(c, {"query", "--local-only", s.first_chunks[2].to_string()}), 1);
  // A batch: local misses asked in one go, hits and misses both right.
  MadeShard unknown = make_shard({.seed = 1399, .xorbs = 1, .chunks_per_xorb = 1});
  json batch = c.http()
                   .post("/v1/chunk",
                         json{{"hashes", {s.first_chunks[0].to_string(), unknown.first_chunks[0].to_string()}}}.dump())
                   .json();
  EXPECT_EQ(batch["found"], 1);
  EXPECT_EQ(batch["fleet"], "ok");
  EXPECT_EQ(batch["results"][0]["locations"][0]["origin"], "fleet");
  // xorb and file lookups fall back to the fleet too.
  json x = c.http().get("/v1/xorb/" + s.xorbs[0].to_string()).json();
  EXPECT_EQ(x["origin"], "fleet");
  EXPECT_EQ(x["num_chunks"], 5);
  // The Xet global-dedup endpoint on B answers A's chunk with A's whole
  // upload shard from the fleet, the chunk's xorb first, then those after
  // it, then those before, keyed with B's key; --local-only: 404.
  const std::string gd = "/v1/chunks/default-merkledb/" + s.first_chunks[1].to_string();
  auto reply = b.http().get(gd);
  ASSERT_EQ(reply.status, 200) << reply.body;
  expect_reply_answers(reply.body, s.xorbs[1], s.first_chunks[1]);
  EXPECT_EQ(reply_xorbs(reply.body), (std::vector<shard::Hash>{s.xorbs[1], s.xorbs[2], s.xorbs[0]}));
  EXPECT_EQ(status_and_fleet_header(b, gd), std::make_pair(200, std::string("ok")));
  EXPECT_EQ(status_and_fleet_header(b, gd + "?local_only=1"), std::make_pair(404, std::string()));
  EXPECT_EQ(status_and_fleet_header(b, "/v1/chunks/default/" + unknown.first_chunks[0].to_string()),
            std::make_pair(404, std::string("ok")));

  // The same shard on B: one fleet shard, two holders.
  drop_file(b.incoming, s.file_name(), s.bytes);
  ASSERT_TRUE(eventually([&] {
    return fleet_holders(c, s.first_chunks[0]) == std::set<std::string>{"host-a", "host-b"};
  }));
  Admin admin(url);
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.shard"), "1");
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.hold"), "2");

  // Remove on A: B still holds it, so C still finds it.
  EXPECT_EQ(a.http().del("/v1/shard/" + s.file_hash.to_string()).status, 200);
  ASSERT_TRUE(eventually([&] { return fleet_holders(c, s.first_chunks[0]) == std::set<std::string>{"host-b"}; }));
  // And on B: the last holder is gone, so are its entries.
  EXPECT_EQ(b.http().del("/v1/shard/" + s.file_hash.to_string()).status, 200);
  ASSERT_TRUE(eventually([&] { return c.http().get("/v1/chunk/" + s.first_chunks[0].to_string()).status == 404; }));
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.shard"), "0");

  // dedupctl fleet status lists the three hosts.
  EXPECT_EQ(dedupctl(a, {"fleet", "status", "--json"}, &out, &err), 0) << err;
  json fs = json::parse(out);
  EXPECT_EQ(fs["hosts"].size(), 3u);
  EXPECT_EQ(fs["this_host"]["host"], "host-a");
}

// A streamed batch of many blocks on a host that holds nothing: its blocks
// are asked of the fleet ahead, on connections of their own, while earlier
// ones are written; a block asked ahead that finds every connection lent
// out (the pool starts with one) is asked again in turn, never answered
// "unavailable". Every hash is found, in order.
// A publish waiting on the primary (a lock, a stalled server) ends at the
// stop, not at the statement's 60 s bound: `systemctl stop dedupd` would
// otherwise wait past TimeoutStopSec (30 s) and SIGKILL it. Nothing is lost:
// the shard stays in the outbox and is published after the next start.
TEST_F(Fleet, AStopIsNotHeldUpByAPublishWaitingOnALock) {
  Cluster& pg = Cluster::shared();
  const std::string url = pg.primary_url(pg.new_database());
  Host& a = add_host("host-a", url);
  a.start();
  a.drop(1901);
  ASSERT_TRUE(eventually([&] { return a.fleet_link()["published"] == 1 && a.outbox_depth() == 0; })) << a.log_text();
  Admin admin(url);
  ASSERT_EQ(admin.try_exec("BEGIN; LOCK TABLE dedupd.shard IN ACCESS EXCLUSIVE MODE"), "");
  a.drop(1902);
  ASSERT_TRUE(eventually([&] { return a.outbox_depth() == 1; })) << a.log_text();
  a.process.signal(SIGTERM);
  // Well inside the 60 s statement bound: the wait was ended, not run out.
  EXPECT_EQ(a.process.wait_exit(std::chrono::seconds(20)), std::optional<int>(0)) << a.log_text();
  EXPECT_NE(a.log_text().find("stopped while waiting for the fleet database"), std::string::npos) << a.log_text();
  ASSERT_EQ(admin.try_exec("COMMIT"), "");
  a.start();
  EXPECT_TRUE(eventually([&] { return a.outbox_depth() == 0 && a.fleet_link()["published"] == 1; })) << a.log_text();
}

TEST_F(Fleet, AStreamedBatchOfManyBlocksIsAnsweredWholeFromTheFleet) {
  Cluster& pg = Cluster::shared();
  std::string url = pg.primary_url(pg.new_database());
  Host& a = add_host("host-a", url, "30s");
  Host& b = add_host("host-b", url, "30s");
  for (Host* h : {&a, &b}) h->start();
  MadeShard s = make_shard({.seed = 1701, .xorbs = 5, .chunks_per_xorb = 4000});
  drop_file(a.incoming, s.file_name(), s.bytes);
  ASSERT_TRUE(eventually([&] { return fleet_holders(b, s.first_chunks[4]).has_value(); }));
  auto view = shard::ShardView::parse(s.bytes);
  ASSERT_TRUE(view);
  json hashes = json::array();
  std::vector<std::string> expected;
  for (const auto& x : view->xorbs())
    for (std::uint32_t i = 0; i < x.num_chunks(); ++i) {
      std::string h = shard::Hash::from_bytes({x.chunk_hash_bytes(i), 32}).to_string();
      hashes.push_back(h);
      expected.push_back(x.hash().to_string() + ":" + std::to_string(i));
    }
  ASSERT_EQ(hashes.size(), 20000u);  // five blocks of the daemon's 4,096
  for (int round = 0; round < 2; ++round) {
    json doc = b.http().post("/v1/chunk", json{{"hashes", hashes}}.dump()).json();
    EXPECT_EQ(doc["fleet"], "ok") << "round " << round;
    EXPECT_EQ(doc["found"], 20000) << "round " << round;
    ASSERT_EQ(doc["results"].size(), 20000u);
    for (std::size_t i = 0; i < expected.size(); i += 997) {
      const json& loc = doc["results"][i]["locations"][0];
      EXPECT_EQ(loc["xorb"].get<std::string>() + ":" + std::to_string(loc["chunk_index"].get<int>()), expected[i]);
      EXPECT_EQ(loc["origin"], "fleet");
    }
  }
}

// Two processes per core spinning until the guard ends them: the daemon, the
// database and the client then share a busy machine, as on a build host.
class CpuLoad {
 public:
  CpuLoad() {
    const long cores = std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
    for (long i = 0; i < 2 * cores; ++i) {
      pid_t pid = ::fork();
      if (pid == 0) {
        volatile std::uint64_t x = 0;
        for (;;) x = x + 1;  // killed by the guard
      }
      if (pid > 0) pids_.push_back(pid);
    }
  }
  ~CpuLoad() {
    for (pid_t pid : pids_) ::kill(pid, SIGKILL);
    for (pid_t pid : pids_) ::waitpid(pid, nullptr, 0);
  }
  CpuLoad(const CpuLoad&) = delete;
  CpuLoad& operator=(const CpuLoad&) = delete;

 private:
  std::vector<pid_t> pids_;
};

// The regression of fd0e0e3: on the default config, a stream of hashes only
// the fleet holds, spread over many xorbs (so each block's lookup fetches
// many CAS blocks), on a machine busy with other work. A block's lookup
// took longer than lookup_timeout (50 ms), which the pool took for an
// outage: it dropped every connection and the xorb cache, so the next
// blocks were slower still, and the stream found nothing from the fleet.
// A database that works is not a database that is down: every hash is
// found, and the daemon never reports the fleet unavailable.
TEST_F(Fleet, AStreamOfFleetOnlyHashesOnTheDefaultConfigOfABusyHostFindsThemAll) {
  Cluster& pg = Cluster::shared();
  std::string url = pg.primary_url(pg.new_database());
  Host& a = add_host("host-a", url, "");
  Host& b = add_host("host-b", url, "");
  for (Host* h : {&a, &b}) h->start();
  std::vector<MadeShard> shards;
  for (std::uint64_t i = 0; i < 4; ++i) {
    shards.push_back(make_shard({.seed = 1750 + i, .xorbs = 32, .chunks_per_xorb = 1024}));
    drop_file(a.incoming, shards.back().file_name(), shards.back().bytes);
  }
  for (const MadeShard& s : shards)
    ASSERT_TRUE(
        eventually([&] { return fleet_holders(b, s.first_chunks[31]).has_value(); }, std::chrono::seconds(120)));
  // Every chunk, shuffled: each 4,096-hash block hits every xorb.
  std::vector<std::string> hashes;
  for (const MadeShard& s : shards) {
    auto view = shard::ShardView::parse(s.bytes);
    ASSERT_TRUE(view);
    for (const auto& x : view->xorbs())
      for (std::uint32_t i = 0; i < x.num_chunks(); ++i)
        hashes.push_back(shard::Hash::from_bytes({x.chunk_hash_bytes(i), 32}).to_string());
  }
  ASSERT_EQ(hashes.size(), 4u * 32 * 1024);
  std::shuffle(hashes.begin(), hashes.end(), std::mt19937(1750));
  const fs::path in = b.dir / "hashes.txt";
  {
    std::ofstream f(in);
    for (const auto& h : hashes) f << h << '\n';
  }
  const std::size_t log_before = b.log_text().size();  // B started before A made the schema
  const fs::path out = b.dir / "answers.txt", err = b.dir / "query.err";
  const std::string cmd = dedupctl_binary() + " --socket " + b.socket.string() + " query --format short - < " +
                          in.string() + " > " + out.string() + " 2> " + err.string();
  for (int round = 0; round < 3; ++round) {
    int rc = 0;
    {
      CpuLoad load;
      rc = run(cmd);
    }
    std::ifstream answers(out);
    std::size_t found = 0, lines = 0;
    for (std::string line; std::getline(answers, line); ++lines) found += line.find(" found ") != std::string::npos;
    const std::string warnings = tests::file_text(err);
    EXPECT_EQ(rc, 0) << "round " << round << ": " << warnings;
    EXPECT_EQ(lines, hashes.size()) << "round " << round;
    EXPECT_EQ(found, hashes.size()) << "round " << round << ": " << warnings;
  }
  EXPECT_EQ(b.log_text().find("lookups answer locally until", log_before), std::string::npos)
      << "the fleet was taken for down while it answered";
}

// More clients at once than B's pool has connections (one, after a start:
// it grows only when requests find it empty). Each borrows a connection or
// waits for one while the server answers; at a4aac7f those that found none
// answered at once "the fleet did not answer in time", from a database
// that answered every other request within milliseconds.
TEST_F(Fleet, ABurstOfClientsBeyondThePoolIsAnsweredByTheFleet) {
  Cluster& pg = Cluster::shared();
  std::string url = pg.primary_url(pg.new_database());
  Host& a = add_host("host-a", url, "2s");
  Host& b = add_host("host-b", url, "2s");
  for (Host* h : {&a, &b}) h->start();
  MadeShard s = make_shard({.seed = 1760, .xorbs = 1, .chunks_per_xorb = 64});
  drop_file(a.incoming, s.file_name(), s.bytes);
  ASSERT_TRUE(eventually([&] { return fleet_holders(b, s.first_chunks[0]).has_value(); }));
  constexpr int kClients = 48;
  Concurrent burst(b.socket);
  for (int i = 0; i < kClients; ++i) burst.get("/v1/chunk/" + s.raw_chunks[std::size_t(i) + 1].to_string());
  burst.join();
  ASSERT_EQ(burst.answers().size(), std::size_t(kClients));
  for (const Response& r : burst.answers()) {
    ASSERT_EQ(r.status, 200) << r.body;
    json doc = r.json();
    EXPECT_EQ(doc["locations"][0]["origin"], "fleet") << r.body;
    EXPECT_FALSE(doc.contains("fleet") && doc["fleet"] == "unavailable") << r.body;
  }
}

TEST_F(Fleet, ExpiryTakesAShardOutFleetWide) {
  Cluster& pg = Cluster::shared();
  std::string url = pg.primary_url(pg.new_database());
  Host& a = add_host("host-a", url);
  Host& c = add_host("host-c", url);
  a.start();
  c.start();
  // Expires a few seconds from now: A indexes it live and publishes it,
  // then its expiry timer removes it and the hold goes with it.
  std::uint64_t expiry = std::uint64_t(std::time(nullptr)) + 8;
  MadeShard s = make_shard({.seed = 1302, .xorbs = 1, .chunks_per_xorb = 3, .expiry = expiry});
  drop_file(a.incoming, s.file_name(), s.bytes);
  // Asked of the database, not of C: a 404 from C says nothing until the
  // shard was there to be removed (C's own view may lag behind).
  Admin admin(url);
  auto fleet_shards = [&] {
    // A's publisher creates the schema when it first connects.
    if (!admin.try_exec("SELECT FROM dedupd.shard LIMIT 0").empty()) return std::string("no schema yet");
    return admin.one("SELECT count(*) FROM dedupd.shard");
  };
  ASSERT_TRUE(eventually([&] { return fleet_shards() == "1"; }, std::chrono::seconds(7))) << "never published";
  ASSERT_TRUE(eventually([&] { return fleet_shards() == "0"; }));
  EXPECT_GE(std::uint64_t(std::time(nullptr)), expiry) << "gone before it expired";
  // And C, reaching the fleet ("ok"), no longer finds it.
  const std::string gd = "/v1/chunks/default/" + s.first_chunks[0].to_string();
  EXPECT_TRUE(eventually([&] { return status_and_fleet_header(c, gd) == std::make_pair(404, std::string("ok")); }));
}

// A shard the fleet holds only keyed (as a Xet server's reply is) answers
// another host's global-dedup query as stored: under its own key, for no
// longer than its expiry. Where the fleet also holds the chunk raw, the raw
// shard wins: it can be re-keyed and lives as long as any reply.
TEST_F(Fleet, AKeyedFleetShardAnswersGlobalDedupUnderItsOwnKey) {
  Cluster& pg = Cluster::shared();
  std::string url = pg.primary_url(pg.new_database());
  Host& a = add_host("host-a", url);
  Host& b = add_host("host-b", url);
  a.start();
  b.start();
  const shard::Key key =
      shard::Hash::parse_hex_bytes("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff").value();
  const std::uint64_t expiry = std::uint64_t(std::time(nullptr)) + 3600;
  MadeShard keyed = make_shard({.seed = 1305, .xorbs = 2, .chunks_per_xorb = 4, .expiry = expiry, .key = key});
  drop_file(a.incoming, keyed.file_name(), keyed.bytes);
  const std::string gd = "/v1/chunks/default/" + keyed.raw_chunks[5].to_string();
  Response reply;
  ASSERT_TRUE(eventually([&] { return (reply = b.http().get(gd)).status == 200; }))
      << "B never answered: " << reply.body;
  auto view = shard::ShardView::parse({reinterpret_cast<const std::uint8_t*>(reply.body.data()), reply.body.size()});
  ASSERT_TRUE(view.ok()) << view.error().to_string();
  EXPECT_EQ(view->chunk_key(), key) << "served under the key it is stored with";
  EXPECT_EQ(view->expiry(), std::optional<std::uint64_t>(expiry));
  expect_reply_answers(reply.body, keyed.xorbs[1], keyed.raw_chunks[5]);
  EXPECT_EQ(reply_xorbs(reply.body), (std::vector<shard::Hash>{keyed.xorbs[1], keyed.xorbs[0]}));

  // The same chunks raw (same seed, so the same xorbs): B now prefers them.
  MadeShard raw = make_shard({.seed = 1305, .xorbs = 2, .chunks_per_xorb = 4});
  ASSERT_EQ(raw.xorbs, keyed.xorbs);
  drop_file(a.incoming, raw.file_name(), raw.bytes);
  ASSERT_TRUE(eventually([&] {
    auto r = b.http().get(gd);
    if (r.status != 200) return false;
    auto v = shard::ShardView::parse({reinterpret_cast<const std::uint8_t*>(r.body.data()), r.body.size()});
    return v.ok() && v->chunk_key() != key;
  })) << "the raw shard never won";
  reply = b.http().get(gd);
  expect_reply_answers(reply.body, keyed.xorbs[1], keyed.raw_chunks[5]);
  view = shard::ShardView::parse({reinterpret_cast<const std::uint8_t*>(reply.body.data()), reply.body.size()});
  ASSERT_TRUE(view.ok());
  EXPECT_GT(view->expiry().value_or(0), expiry) << "a re-keyed reply lives its whole lifetime";
}

// Issue 42: the key filters are built off the lookup path. B, asked
// nothing, has the filter of a key A published after B connected, in use
// for its generation, and the raw forms' filter with what A published raw.
// Their memory is shown in status, --json and /metrics.
TEST_F(Fleet, TheKeyFiltersAreKeptWithoutALookupAndTheirMemoryIsShown) {
  auto pair = publisher_and_small_filters();
  Host& a = pair.first;
  Host& b = pair.second;
  auto filters = [&] { return b.status()["fleet"]["lookup_memory"]["key_filters"]; };
  ASSERT_TRUE(eventually([&] { return b.status()["fleet"]["state"] == "connected"; }));
  EXPECT_EQ(filters()["keys"], 0u);
  EXPECT_EQ(filters()["max_bytes"], std::uint64_t(8) << 20);
  const shard::Key key =
      shard::Hash::parse_hex_bytes("ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100").value();
  MadeShard keyed = make_shard({.seed = 1310, .xorbs = 2, .chunks_per_xorb = 4, .expiry = 4000000000ull, .key = key});
  drop_file(a.incoming, keyed.file_name(), keyed.bytes);
  ASSERT_TRUE(eventually([&] { return filters()["keys"] == 1u && filters()["entries"] == 8u; })) << filters().dump();
  EXPECT_GT(filters()["bytes"].get<std::uint64_t>(), 0u);
  // Now B's pool is connected and idle: only the keeper brings the filter
  // up to the key's next generation.
  MadeShard more = make_shard({.seed = 1311, .xorbs = 1, .chunks_per_xorb = 5, .expiry = 4000000000ull, .key = key});
  drop_file(a.incoming, more.file_name(), more.bytes);
  ASSERT_TRUE(eventually([&] { return filters()["entries"] == 13u; })) << filters().dump();
  EXPECT_EQ(filters()["thinnest_bits_per_entry"], 16);
  EXPECT_EQ(filters()["keys_over_budget"], 0u);
  // And the raw forms' filter the same way.
  MadeShard raw = make_shard({.seed = 1312, .xorbs = 1, .chunks_per_xorb = 6});
  drop_file(a.incoming, raw.file_name(), raw.bytes);
  ASSERT_TRUE(eventually([&] { return filters()["raw_entries"] == 6u; })) << filters().dump();
  EXPECT_EQ(filters()["raw_bits_per_entry"], 16);
  EXPECT_EQ(filters()["raw_over_budget"], false);
  EXPECT_EQ(filters()["entries"], 13u) << "the keys' entries alone";
  const std::string metrics = b.http().get("/metrics").body;
  EXPECT_NE(metrics.find("\ndedupd_fleet_key_filters 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("\ndedupd_fleet_key_filter_max_bytes 8388608\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("\ndedupd_fleet_raw_filter_entries 6\n"), std::string::npos) << metrics;
  std::string out, err;
  EXPECT_EQ(dedupctl(b, {"status"}, &out, &err), 0) << out << err;
  EXPECT_NE(out.find("of 8.0 MiB key filters (1 key; raw forms: 6 entries at 16 bits)"), std::string::npos) << out;
}

// The filters outlive a restart: B writes them to its state directory by
// its stop at the latest, reads them at its next start, and they are in use
// again once listed, without a CAS block fetched for what they held. A
// damaged file is said, left unused, and written anew.
TEST_F(Fleet, TheKeyFiltersAreKeptAcrossARestartAndADamagedFileIsNotUsed) {
  auto pair = publisher_and_small_filters();
  Host& a = pair.first;
  Host& b = pair.second;
  auto filters = [&] { return b.status()["fleet"]["lookup_memory"]["key_filters"]; };
  const shard::Key key =
      shard::Hash::parse_hex_bytes("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff").value();
  MadeShard keyed = make_shard({.seed = 1320, .xorbs = 2, .chunks_per_xorb = 4, .expiry = 4000000000ull, .key = key});
  MadeShard raw = make_shard({.seed = 1321, .xorbs = 1, .chunks_per_xorb = 6});
  drop_file(a.incoming, keyed.file_name(), keyed.bytes);
  drop_file(a.incoming, raw.file_name(), raw.bytes);
  auto both_in_use = [&] {
    return filters()["keys"] == 1u && filters()["entries"] == 8u && filters()["raw_entries"] == 6u;
  };
  ASSERT_TRUE(eventually(both_in_use)) << filters().dump();
  ASSERT_EQ(b.process.stop(), 0);
  const auto file = b.dir / "state" / "fleet-key-filters";
  ASSERT_TRUE(std::filesystem::exists(file)) << b.log_text();

  b.start();
  ASSERT_TRUE(eventually(both_in_use)) << filters().dump();
  EXPECT_NE(b.log_text().find("2 key filter(s) of 14 entries"), std::string::npos) << b.log_text();

  // A bit flipped: not used, said, and the filters built from the database.
  ASSERT_EQ(b.process.stop(), 0);
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-20, std::ios::end);
    f.put('\x5a');
  }
  const std::size_t log_before = b.log_text().size();
  b.start();
  ASSERT_TRUE(eventually(both_in_use)) << filters().dump();
  const std::string log = b.log_text().substr(log_before);
  EXPECT_NE(log.find("are not used"), std::string::npos) << log;
  EXPECT_NE(log.find("checksum"), std::string::npos) << log;
  EXPECT_EQ(log.find("read from"), std::string::npos) << log;
  ASSERT_EQ(b.process.stop(), 0);
  fleet::KeyFilters set(8 << 20);
  auto written = fleet::load_kept_filters(set, file);
  ASSERT_TRUE(written) << "not written anew by the stop: " << written.error().to_string();
  EXPECT_EQ(written->filters, 2u);
}

// Issue 41: a global-dedup query naming its CAS (X-Dedupd-Cas, as the local
// Xet endpoint's nginx sends) is answered from the fleet only by shards of
// that CAS: another CAS's shard would have the client skip xorbs its CAS
// lacks. Each host's shards carry the CAS of the watch entry they came
// under; when a host finds the same shard under another CAS, the fleet
// learns that CAS too.
TEST_F(Fleet, AGlobalDedupQueryNamingItsCasIsAnsweredFromTheFleetOnlyByShardsOfThatCas) {
  Cluster& pg = Cluster::shared();
  std::string url = pg.primary_url(pg.new_database());
  const std::string cas_a = "https://cas-a.example", cas_b = "https://cas-b.example";
  Host& a = add_host("host-a", url);
  Host& b = add_host("host-b", url);
  a.incoming_cas = cas_a;
  a.cas_watches = {{a.dir / "incoming-b", cas_b}};
  fs::create_directories(a.dir / "incoming-b");
  b.incoming_cas = cas_b;
  a.write_config(url);
  b.write_config(url);
  a.start();
  b.start();
  auto ask = [](Host& h, const shard::Hash& chunk, const std::string& cas) {
    return status_and_fleet_header(h, "/v1/chunks/default/" + chunk.to_string(),
                                   cas.empty() ? "" : "X-Dedupd-Cas: " + cas);
  };
  using Answer = std::pair<int, std::string>;

  MadeShard sa = make_shard({.seed = 1411, .xorbs = 2, .chunks_per_xorb = 4});
  MadeShard sb = make_shard({.seed = 1412, .xorbs = 1, .chunks_per_xorb = 4});
  drop_file(a.incoming, sa.file_name(), sa.bytes);
  drop_file(b.incoming, sb.file_name(), sb.bytes);
  const shard::Hash in_a = sa.raw_chunks[5], in_b = sb.raw_chunks[2];

  // B has A's shard from the fleet only: it answers A's CAS...
  ASSERT_TRUE(eventually([&] {
    return ask(b, in_a, cas_a) == Answer{200, "ok"};
  })) << "B never answered A's shard for A's CAS";
  json doc = b.http().get("/v1/chunk/" + in_a.to_string()).json();
  ASSERT_EQ(doc["locations"].size(), 1u) << doc.dump();
  EXPECT_EQ(doc["locations"][0]["origin"], "fleet");
  EXPECT_EQ(doc["locations"][0]["shards"][0]["cas"], cas_a) << doc.dump();
  // ...not its own: the fleet holds the chunk, in a shard of another CAS.
  EXPECT_EQ(ask(b, in_a, cas_b), (Answer{404, "ok"}));
  // A query naming no CAS (dedupctl, scripts) is answered from every shard.
  EXPECT_EQ(ask(b, in_a, "").first, 200);
  // The same the other way round, on A.
  ASSERT_TRUE(eventually([&] {
    return ask(a, in_b, cas_b) == Answer{200, "ok"};
  })) << "A never answered B's shard for B's CAS";
  EXPECT_EQ(ask(a, in_b, cas_a), (Answer{404, "ok"}));
  // B's own shard answers B's CAS locally, and not A's.
  EXPECT_EQ(ask(b, in_b, cas_b).first, 200);
  EXPECT_EQ(ask(b, in_b, cas_a).first, 404);

  // A finds the same shard under B's CAS too (the same bytes accepted by
  // both): A's index learns it and so does the fleet, and B answers it
  // for its own CAS from then on.
  drop_file(a.dir / "incoming-b", sa.file_name(), sa.bytes);
  ASSERT_TRUE(eventually([&] {
    return ask(b, in_a, cas_b) == Answer{200, "ok"};
  })) << "the fleet never learned that B's CAS accepted A's shard";
  EXPECT_EQ(ask(b, in_a, cas_a), (Answer{200, "ok"}));
  // A plain lookup may answer from holders B read up to a second ago.
  EXPECT_TRUE(eventually([&] {
    doc = b.http().get("/v1/chunk/" + in_a.to_string()).json();
    return doc["locations"][0]["shards"][0]["cas"] == cas_a + " " + cas_b;
  })) << doc.dump();
  Admin admin(url);
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.shard"), "2");
  EXPECT_EQ(admin.one("SELECT array_to_string(cas, ' ') FROM dedupd.shard WHERE hash = decode('" +
                      sa.file_hash.to_hex_bytes() + "', 'hex')"),
            cas_a + " " + cas_b);
}

// A refusal heals itself with a fleet too: once the CAS refused an upload
// that relied on a shard here, that shard answers no global-dedup query of
// this host, from the index or from the fleet's copy of it.
TEST_F(Fleet, AShardSetAsideAfterARefusalDoesNotComeBackThroughTheFleet) {
  Cluster& pg = Cluster::shared();
  std::string url = pg.primary_url(pg.new_database());
  const std::string cas = "https://cas-a.example";
  Host& a = add_host("host-a", url);
  a.incoming_cas = cas;
  // Learning is on with an endpoint configured (its settings file need
  // not exist); this test sends what the endpoint's nginx would.
  FleetConfig with_endpoint;
  with_endpoint.fleet_extra = "xet_endpoint:\n  config: " + (a.dir / "xet-endpoint.conf").string() + "\n";
  a.write_config(url, with_endpoint);
  a.start();
  MadeShard sa = make_shard({.seed = 1511, .xorbs = 2, .chunks_per_xorb = 4});
  drop_file(a.incoming, sa.file_name(), sa.bytes);
  const shard::Hash chunk = sa.raw_chunks[1];
  auto ask = [&] {
    return status_and_fleet_header(a, "/v1/chunks/default/" + chunk.to_string(), "X-Dedupd-Cas: " + cas).first;
  };
  ASSERT_TRUE(eventually([&] { return ask() == 200 && a.outbox_depth() == 0; })) << a.log_text();
  Admin admin(url);
  ASSERT_EQ(admin.one("SELECT count(*) FROM dedupd.shard"), "1");

  // A client's upload shard that relied on the first xorb of sa without
  // carrying it, mirrored by the endpoint, then refused by the CAS.
  refuse_upload_relying_on(a, sa, cas, "00112233445566778899aabbccddeeff");
  ASSERT_TRUE(eventually([&] { return a.status()["xet_endpoint"]["learning"]["set_aside"] == 1; })) << a.log_text();
  // Not from the index, and not from the fleet, which still holds it (and
  // was asked: the header says it answered).
  std::pair<int, std::string> answer;
  eventually([&] {
    answer = status_and_fleet_header(a, "/v1/chunks/default/" + chunk.to_string(), "X-Dedupd-Cas: " + cas);
    return answer.second == "ok";  // the first asks may find no fleet connection yet
  });
  EXPECT_EQ(answer, (std::pair<int, std::string>{404, "ok"}));
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.shard"), "1");
  // Plain lookups still find it; an admin may bring it back.
  EXPECT_EQ(a.http().get("/v1/chunk/" + chunk.to_string()).status, 200);
  EXPECT_EQ(a.http().post("/v1/admin/restore/" + sa.file_hash.to_string(), "").status, 200);
  EXPECT_EQ(ask(), 200);
}

// One refusal sets the shard aside for the whole fleet (issue 58): host B,
// which has it only through the fleet, and host C, which holds a copy of its
// own, stop answering with it for that CAS, so their clients' uploads do not
// rely on the lost xorb; a restore on A brings it back on every host.
TEST_F(Fleet, ARefusalOnOneHostSetsTheShardAsideOnEveryHost) {
  const std::string cas = "https://cas-a.example";
  Cluster& pg = Cluster::shared();
  const std::string url = pg.primary_url(pg.new_database());
  std::vector<Host*> three = start_endpoint_hosts(url, cas, {"host-a", "host-b", "host-c"});
  Host &a = *three[0], &b = *three[1], &c = *three[2];
  MadeShard sa = make_shard({.seed = 1521, .xorbs = 2, .chunks_per_xorb = 4});
  drop_file(a.incoming, sa.file_name(), sa.bytes);
  drop_file(c.incoming, sa.file_name(), sa.bytes);
  const std::string gd = "/v1/chunks/default/" + sa.raw_chunks[1].to_string();
  // The status; B's answers come from the fleet, which must have answered.
  auto answer = [&](Host& h) {
    auto [status, fleet] = status_and_fleet_header(h, gd, "X-Dedupd-Cas: " + cas);
    return &h == &b && fleet != "ok" ? 0 : status;
  };
  const int found = 200, not_found = 404;
  ASSERT_TRUE(eventually([&] {
    return answer(a) == found && answer(b) == found && answer(c) == found && a.outbox_depth() == 0 &&
           c.outbox_depth() == 0;
  })) << answer(a)
      << " " << answer(b) << " " << answer(c) << " " << a.outbox_depth() << " " << c.outbox_depth();

  refuse_upload_relying_on(a, sa, cas, "00112233445566778899aabbccddee01");
  // B and C within a read of the marks (2 s), A at once.
  ASSERT_TRUE(eventually([&] { return answer(a) == not_found && answer(b) == not_found && answer(c) == not_found; }))
      << b.log_text() << c.log_text();
  Admin admin(url);
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.set_aside"), "1");
  EXPECT_EQ(admin.one("SELECT m.cas || ' ' || h.name FROM dedupd.set_aside m JOIN dedupd.host h ON h.id = m.host_id"),
            cas + " host-a");
  // C's own copy is set aside in its index, saying why; plain lookups still find it.
  json shard_c = c.http().get("/v1/shard/" + sa.file_hash.to_string()).json();
  EXPECT_EQ(shard_c["set_aside"]["reason"].get<std::string>().rfind("fleet: host-a saw " + cas, 0), 0u)
      << shard_c.dump();
  EXPECT_EQ(c.http().get("/v1/chunk/" + sa.raw_chunks[1].to_string()).status, 200);
  json fs_b = b.http().get("/v1/fleet/status").json();
  EXPECT_EQ(fs_b["set_aside_marks"], 1) << fs_b.dump();
  EXPECT_EQ(fs_b["this_host"]["set_aside"]["marks"], 1) << fs_b.dump();
  EXPECT_EQ(fs_b["mid_upgrade"], false) << fs_b.dump();

  // Restored on A: the mark goes, and every host answers with it again.
  ASSERT_EQ(a.http().post("/v1/admin/restore/" + sa.file_hash.to_string(), "").status, 200);
  ASSERT_TRUE(eventually([&] { return answer(a) == found && answer(b) == found && answer(c) == found; }))
      << b.log_text() << c.log_text();
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.set_aside"), "0");
  EXPECT_NE(c.log_text().find("answers again"), std::string::npos);
}

// The host whose CAS refused holds no copy of the shard its answer came
// from: it answered from the fleet. It marks the fleet's shards holding the
// xorbs the refused upload relied on, so no host answers with them for that
// CAS any more, its own fleet answers included: one failed upload, not one
// per attempt until someone restores it.
TEST_F(Fleet, ARefusalRelyingOnAShardOnlyInTheFleetMarksItThere) {
  const std::string cas = "https://cas-a.example";
  Cluster& pg = Cluster::shared();
  const std::string url = pg.primary_url(pg.new_database());
  std::vector<Host*> two = start_endpoint_hosts(url, cas, {"host-a", "host-b"});
  Host &a = *two[0], &b = *two[1];
  MadeShard sa = make_shard({.seed = 1531, .xorbs = 2, .chunks_per_xorb = 4});
  drop_file(a.incoming, sa.file_name(), sa.bytes);
  const std::string gd = "/v1/chunks/default/" + sa.raw_chunks[1].to_string();
  auto answer = [&](Host& h) {
    auto [status, fleet] = status_and_fleet_header(h, gd, "X-Dedupd-Cas: " + cas);
    return &h == &b && fleet != "ok" ? 0 : status;
  };
  const int found = 200, not_found = 404;
  ASSERT_TRUE(eventually([&] { return answer(a) == found && answer(b) == found && a.outbox_depth() == 0; }))
      << answer(a) << " " << answer(b);
  EXPECT_EQ(b.http().get("/v1/shard/" + sa.file_hash.to_string()).status, 404);  // B has no copy

  refuse_upload_relying_on(b, sa, cas, "00112233445566778899aabbccddee21");
  ASSERT_TRUE(eventually([&] { return answer(b) == not_found && answer(a) == not_found; }))
      << b.log_text() << a.log_text();
  Admin admin(url);
  EXPECT_EQ(admin.one("SELECT m.cas || ' ' || h.name FROM dedupd.set_aside m JOIN dedupd.host h ON h.id = m.host_id"),
            cas + " host-b");
  json shard_a = a.http().get("/v1/shard/" + sa.file_hash.to_string()).json();
  EXPECT_EQ(shard_a["set_aside"]["reason"].get<std::string>().rfind("fleet: host-b saw " + cas, 0), 0u)
      << shard_a.dump();
}

// libpq and the libraries it brings (Kerberos, LDAP, SASL) are opened at the
// first fleet connection, never at start: a host without a fleet never reads
// them from disk (fleet/libpq_on_demand.cpp).
TEST_F(Fleet, LibpqIsLoadedOnlyWhenAFleetIsConfigured) {
  Cluster& pg = Cluster::shared();
  std::string url = pg.primary_url(pg.new_database());
  Host& alone = add_host("host-alone", "");
  Host& member = add_host("host-member", url);
  alone.start();
  member.start();
  auto maps_libpq = [](Host& h) {
    std::string maps = tests::file_text("/proc/" + std::to_string(h.process.pid()) + "/maps");
    EXPECT_FALSE(maps.empty()) << h.name;
    return maps.find("/libpq.so") != std::string::npos;
  };
  ASSERT_TRUE(eventually([&] { return member.status()["fleet"]["state"] == "connected"; })) << member.log_text();
  EXPECT_TRUE(maps_libpq(member));
  EXPECT_TRUE(alone.status()["fleet"].is_null()) << alone.status().dump();
  EXPECT_FALSE(maps_libpq(alone)) << "libpq mapped by a dedupd without a fleet";
}

// SIGHUP applies a changed url; the url (it may carry a password) is never
// written to the log, whatever happens with it.
TEST_F(Fleet, SighupAppliesAChangedUrlAndTheUrlIsNeverLogged) {
  Cluster& pg = Cluster::shared();
  std::string db = pg.new_database();
  std::string good = pg.primary_url(db) + " password=s3cret-in-url";
  // Nothing listens there: the publisher keeps retrying, ingest goes on.
  std::string bad = "host=" + (root / "nowhere").string() + " port=1 dbname=x user=y password=s3cret-in-url";
  Host& a = add_host("host-a", bad);
  Host& c = add_host("host-c", good);
  a.start();
  c.start();
  MadeShard s = make_shard({.seed = 1308, .xorbs = 1, .chunks_per_xorb = 3});
  drop_file(a.incoming, s.file_name(), s.bytes);
  ASSERT_TRUE(eventually([&] { return a.http().get("/v1/chunk/" + s.first_chunks[0].to_string()).status == 200; }));
  ASSERT_TRUE(eventually([&] { return a.status()["fleet"]["state"] == "unavailable"; }));
  EXPECT_EQ(a.outbox_depth(), 1u);
  a.write_config(good);
  a.process.signal(SIGHUP);
  ASSERT_TRUE(eventually([&] { return fleet_holders(c, s.first_chunks[0]) == std::set<std::string>{"host-a"}; }));
  // The publisher acknowledges its outbox entry after the fleet database
  // committed it: on a busy host the holders show up first.
  EXPECT_TRUE(eventually([&] { return a.outbox_depth() == 0u; })) << a.outbox_depth();
  for (Host* h : {&a, &c}) {
    std::string log = h->log_text();
    EXPECT_EQ(log.find("s3cret"), std::string::npos) << h->name << " logged the url";
  }
}

// Runs a program; returns its exit code and what it printed.
int run(const std::string& cmd, std::string& out) {
  ProgramRun r = run_shell(cmd + " 2>&1");
  out = r.out;
  return r.code;
}

TEST_F(Fleet, FleetMigrateCreatesTheSchemaThenHasNothingToDo) {
  Cluster& pg = Cluster::shared();
  std::string url = pg.primary_url(pg.new_database());
  Host& a = add_host("host-a", url);
  std::string out;
  const std::string cmd = dedupd_binary() + " --fleet-migrate --config " + a.config.string();
  EXPECT_EQ(run(cmd, out), 0) << out;
  EXPECT_NE(out.find("created at version"), std::string::npos) << out;
  EXPECT_EQ(run(cmd, out), 0) << out;
  EXPECT_NE(out.find("already"), std::string::npos) << out;
  Admin admin(url);
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.host"), "0") << "--fleet-migrate registered a host";
  // Without a fleet section: exit 2, saying so.
  std::ofstream(a.config) << "state_dir: " << (a.dir / "state").string() << "\n";
  EXPECT_EQ(run(cmd, out), 2) << out;
  EXPECT_NE(out.find("no fleet section"), std::string::npos) << out;
}

TEST_F(Fleet, WithTheDatabaseDownLocalAnswersKeepComingAndTheOutboxDrainsAfter) {
  Cluster pg = Cluster::start_own();
  std::string db = pg.new_database();
  std::string url = pg.primary_url(db);
  Host& a = add_host("host-a", url);
  Host& b = add_host("host-b", url);
  a.start();
  b.start();
  MadeShard first = make_shard({.seed = 1303, .xorbs = 1, .chunks_per_xorb = 3});
  drop_file(a.incoming, first.file_name(), first.bytes);
  ASSERT_TRUE(eventually([&] { return fleet_holders(b, first.first_chunks[0]).has_value(); }));

  pg.stop_primary();
  // A indexes while the database is down: locally at once, the fleet later.
  MadeShard second = make_shard({.seed = 1304, .xorbs = 1, .chunks_per_xorb = 3});
  drop_file(a.incoming, second.file_name(), second.bytes);
  ASSERT_TRUE(
      eventually([&] { return a.http().get("/v1/chunk/" + second.first_chunks[0].to_string()).status == 200; }));
  EXPECT_GE(a.outbox_depth(), 1u);
  // B's answers keep coming, marked: its own misses say the fleet is unavailable.
  auto r = b.http().get("/v1/chunk/" + second.first_chunks[0].to_string());
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.json()["fleet"], "unavailable");
  // The global-dedup endpoint too: the local answer (404), the fleet said unavailable.
  EXPECT_EQ(status_and_fleet_header(b, "/v1/chunks/default-merkledb/" + second.first_chunks[0].to_string()),
            std::make_pair(404, std::string("unavailable")));
  std::string out, err;
  EXPECT_EQ(dedupctl(b, {"query", second.first_chunks[0].to_string()}, &out, &err), 1);
  EXPECT_NE(err.find("fleet did not answer"), std::string::npos) << err;
  // A's local hit answers as it always does.
  EXPECT_EQ(dedupctl(a, {"query", second.first_chunks[0].to_string()}, &out, &err), 0);
  ASSERT_TRUE(eventually([&] { return a.status()["fleet"]["state"] == "unavailable"; }));

  pg.start_primary();
  ASSERT_TRUE(eventually([&] { return a.outbox_depth() == 0; }));
  ASSERT_TRUE(eventually([&] { return fleet_holders(b, second.first_chunks[0]) == std::set<std::string>{"host-a"}; }));
  EXPECT_EQ(a.status()["fleet"]["state"], "connected");
}

// The bound holds by construction: a request never connects (a connector
// thread does), so a server that accepts and never answers costs requests
// nothing. The bound here (60 s, the most the config takes) is twice what the
// test waits for answers: a request that waited for the server would fail it.
TEST_F(Fleet, AServerThatNeverAnswersCostsRequestsNoWait) {
  fs::path sock_dir = root / "silent";
  fs::create_directories(sock_dir);
  SilentServer silent(sock_dir, 5432);
  ASSERT_EQ(silent.error(), "");
  Host& a = add_host("host-a", "host=" + sock_dir.string() + " port=5432 dbname=x user=y", "60s");
  a.start();
  MadeShard s = make_shard({.seed = 1310, .xorbs = 1, .chunks_per_xorb = 3});
  MadeShard unknown = make_shard({.seed = 1311, .xorbs = 1, .chunks_per_xorb = 1});
  drop_file(a.incoming, s.file_name(), s.bytes);
  ASSERT_TRUE(eventually([&] { return a.http().get("/v1/chunk/" + s.first_chunks[0].to_string()).status == 200; }));
  // The daemon is talking to it (and stuck there, off the request path).
  ASSERT_TRUE(eventually([&] { return silent.accepted() >= 2; })) << "nothing connected to the silent server";

  constexpr int kRequests = 8;
  Concurrent batch(a.socket);
  for (int i = 0; i < kRequests; ++i) {
    batch.get("/v1/chunk/" + unknown.first_chunks[0].to_string());
    batch.get("/v1/chunk/" + s.first_chunks[0].to_string());
  }
  ASSERT_TRUE(eventually([&] { return batch.answers().size() == 2 * kRequests; }, std::chrono::seconds(30)))
      << batch.answers().size() << " of " << 2 * kRequests << " answered";
  batch.join();
  int misses = 0, hits = 0;
  for (const Response& r : batch.answers()) {
    json doc = r.json();
    if (r.status == 404) {
      ++misses;
      EXPECT_EQ(doc["fleet"], "unavailable") << r.body;
    } else {
      ++hits;
      EXPECT_EQ(r.status, 200) << r.body;
      EXPECT_EQ(doc["locations"][0]["origin"], "local") << r.body;
    }
  }
  EXPECT_EQ(misses, kRequests);
  EXPECT_EQ(hits, kRequests);
  // A batch with a hit and a miss: the hit, and the fleet marked unavailable.
  json b = a.http()
               .post("/v1/chunk",
                     json{{"hashes", {s.first_chunks[0].to_string(), unknown.first_chunks[0].to_string()}}}.dump())
               .json();
  EXPECT_EQ(b["found"], 1);
  EXPECT_EQ(b["fleet"], "unavailable");
  EXPECT_EQ(status_and_fleet_header(a, "/v1/chunks/default-merkledb/" + unknown.first_chunks[0].to_string()),
            std::make_pair(404, std::string("unavailable")));
}

// A connection that was fine and then stops answering (the server is
// SIGSTOPped) holds up the one request using it, never the others: they get
// no connection, wait for one within their bound (1 s at most), and answer
// marked unavailable while it waits. So
// a read that may wait on the fleet never runs on an HTTP thread, which
// serves every connection it accepted (daemon/api/http/job_queue.hpp).
TEST_F(Fleet, AStuckConnectionHoldsUpOnlyItsOwnRequest) {
  Cluster pg = Cluster::start_own();
  std::string url = pg.primary_url(pg.new_database());
  Host& a = add_host("host-a", url);
  Host& b = add_host("host-b", url, "60s");
  a.start();
  b.start();
  MadeShard s = make_shard({.seed = 1312, .xorbs = 1, .chunks_per_xorb = 3});
  MadeShard unknown = make_shard({.seed = 1313, .xorbs = 1, .chunks_per_xorb = 1});
  drop_file(a.incoming, s.file_name(), s.bytes);
  drop_file(b.incoming, unknown.file_name(), unknown.bytes);
  ASSERT_TRUE(eventually([&] { return fleet_holders(b, s.first_chunks[0]).has_value(); }));
  ASSERT_TRUE(
      eventually([&] { return b.http().get("/v1/chunk/" + unknown.first_chunks[0].to_string()).status == 200; }));

  // Several connections ready, as on a host serving several clients: the
  // pool grows while requests find every connection lent. At fd0e0e3 two
  // stuck requests then held both HTTP threads, and every connection those
  // threads had accepted waited with them (the flaky failure: nothing was
  // answered until the header timeout closed them).
  for (int round = 0; round < 4; ++round) {
    Concurrent warm(b.socket);
    for (int i = 0; i < 8; ++i) warm.get("/v1/chunk/" + s.raw_chunks[1].to_string());
    warm.join();
    ::usleep(100'000);  // the connector fills the pool
  }
  auto pids = pg.sigstop_primary();
  ASSERT_FALSE(pids.empty());
  // More requests than the pool keeps connections: some find none idle.
  constexpr int kRequests = 12;
  std::vector<Response> answered;
  {
    Concurrent misses(b.socket);
    for (int i = 0; i < kRequests; ++i) misses.get("/v1/chunk/" + s.raw_chunks[1].to_string());
    bool some = eventually([&] { return !misses.answers().empty(); }, std::chrono::seconds(30));
    answered = misses.answers();
    // B's own shard answers too, on a new connection, while one is stuck.
    auto hit = status_and_fleet_header(b, "/v1/chunk/" + unknown.first_chunks[0].to_string());
    for (int pid : pids) ::kill(pid, SIGCONT);
    ASSERT_TRUE(some) << "no request was answered while the server was stopped";
    EXPECT_EQ(hit.first, 200);
    EXPECT_LT(answered.size(), std::size_t(kRequests)) << "no request was ever stuck: the test proves nothing";
    misses.join();
    EXPECT_EQ(misses.answers().size(), std::size_t(kRequests));
  }
  for (const Response& r : answered) {
    EXPECT_EQ(r.status, 404) << r.body;
    EXPECT_EQ(r.json()["fleet"], "unavailable") << r.body;
  }
  // Once the server runs again, the fleet answers again.
  ASSERT_TRUE(eventually([&] { return fleet_holders(b, s.first_chunks[0]).has_value(); }));
}

// kill -9 of a publishing dedupd at instants picked by progress (how many
// shards the fleet holds so far, or a publish transaction seen open): the
// fleet never holds a part of a shard, and after the restart every local
// shard is held exactly once.
TEST_F(Fleet, KilledWhilePublishingEveryShardEndsUpPublishedOnce) {
  Cluster& pg = Cluster::shared();
  std::string url = pg.primary_url(pg.new_database());
  Host& a = add_host("host-a", url);
  a.start();
  // The publisher creates the schema when it first connects.
  ASSERT_TRUE(eventually([&] { return a.status()["fleet"]["state"] == "connected"; }));
  Admin admin(url);
  std::mt19937 rng(1305);
  std::vector<MadeShard> made;
  // More kills for a long run: DEDUPD_FLEET_KILL_ROUNDS (shards are dropped
  // six per round).
  const char* rounds_env = std::getenv("DEDUPD_FLEET_KILL_ROUNDS");
  const int rounds = rounds_env ? std::max(1, std::atoi(rounds_env)) : 4;
  made.clear();
  for (int i = 0; i < rounds * 6; ++i)
    made.push_back(make_shard({.seed = 1400 + std::uint64_t(i), .xorbs = 4, .chunks_per_xorb = 200}));
  const int kShards = rounds * 6;
  int next = 0;
  int inside_transaction = 0;  // kills seen inside a publish transaction
  for (int round = 0; round < rounds; ++round) {
    // Drop a few, wait until the fleet holds a random number of them, kill.
    int until = next + 6;
    for (; next < until; ++next) drop_file(a.incoming, made[next].file_name(), made[next].bytes);
    std::string held_before = admin.one("SELECT count(*) FROM dedupd.hold");
    auto held_now = [&] { return std::stoi(admin.one("SELECT count(*) FROM dedupd.hold")); };
    if (round % 2 == 0) {
      // Between shards: once the fleet holds a random number of them.
      int target = int(rng() % 6);
      ASSERT_TRUE(eventually([&] { return held_now() >= std::stoi(held_before) + target; }));
    } else {
      // Inside a publish transaction: as soon as the publisher's backend is
      // seen in one (or, if every publish slipped between two looks, once
      // all six are held).
      // Looked at as fast as the server answers: a publish of one shard
      // lasts a few milliseconds.
      auto look = [&] {
        return admin.one(
                   "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'dedupd' AND datname = "
                   "current_database() AND (state = 'idle in transaction' OR (state = 'active' AND (query "
                   "LIKE 'COPY%' OR query LIKE 'INSERT%' OR query LIKE 'SELECT id FROM dedupd.shard%'))) AND "
                   "pid <> pg_backend_pid()") != "0";
      };
      bool inside = false, all_held = false;
      for (auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
           !inside && !all_held && std::chrono::steady_clock::now() < end;)
        if (!(inside = look())) all_held = held_now() >= std::stoi(held_before) + 6;
      ASSERT_TRUE(inside || all_held) << "the publisher made no progress";
      if (inside) ++inside_transaction;
    }
    a.process.kill_hard();
    // Never a half shard: each fleet shard has all the chunk entries it
    // claims, each xorb all its chunk rows, and its xorbs in both orders.
    EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.shard s WHERE s.chunks <> (SELECT coalesce(sum(x.chunks), 0) "
                        "FROM dedupd.xorb x WHERE x.id = ANY(s.xorb_ids)) OR cardinality(s.xorb_order) <> "
                        "cardinality(s.xorb_ids)"),
              "0");
    EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.xorb x LEFT JOIN (SELECT xorb_id, count(*) AS n FROM "
                        "dedupd.chunk GROUP BY xorb_id) c ON c.xorb_id = x.id WHERE coalesce(c.n, 0) <> x.chunks"),
              "0");
    a.start();
  }
  ASSERT_TRUE(eventually(
      [&] { return a.outbox_depth() == 0 && a.http().get("/v1/stats").json()["shards"]["live"] == json(kShards); }));
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.shard"), std::to_string(kShards));
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.hold h JOIN dedupd.host o ON o.id = h.host_id WHERE o.name = "
                      "'host-a'"),
            std::to_string(kShards));
  EXPECT_EQ(admin.one("SELECT sum(chunks) FROM dedupd.shard"), std::to_string(kShards * 4 * 200));
  std::printf("%d kills, %d of them inside a publish transaction\n", rounds, inside_transaction);
}

TEST_F(Fleet, AfterTheStandbyIsPromotedPublishingResumesWithNothingLost) {
  Cluster pg = Cluster::start_own();
  std::string db = pg.new_database();
  pg.add_standby();
  std::string url = pg.both_url(db);
  Host& a = add_host("host-a", url);
  Host& b = add_host("host-b", url);
  a.start();
  b.start();
  // Both shards hold an empty file beside verified ones: nothing is lost,
  // that shape included.
  MadeShard before =
      with_empty_file(make_shard({.seed = 1306, .xorbs = 1, .chunks_per_xorb = 3, .client_style = true}));
  drop_file(a.incoming, before.file_name(), before.bytes);
  ASSERT_TRUE(eventually([&] { return fleet_holders(b, before.first_chunks[0]).has_value(); }));
  pg.wait_standby_caught_up();
  pg.stop_primary();
  MadeShard during =
      with_empty_file(make_shard({.seed = 1307, .xorbs = 1, .chunks_per_xorb = 3, .client_style = true}));
  drop_file(a.incoming, during.file_name(), during.bytes);
  ASSERT_TRUE(
      eventually([&] { return a.http().get("/v1/chunk/" + during.first_chunks[0].to_string()).status == 200; }));
  pg.promote();
  ASSERT_TRUE(eventually([&] { return a.outbox_depth() == 0; }));
  ASSERT_TRUE(eventually([&] { return fleet_holders(b, during.first_chunks[0]) == std::set<std::string>{"host-a"}; }));
  EXPECT_TRUE(fleet_holders(b, before.first_chunks[0]).has_value()) << "lost in the failover";
  Admin promoted(pg.standby_url(db));
  EXPECT_EQ(promoted.one("SELECT count(*) FROM dedupd.shard"), "2");
  EXPECT_EQ(a.status()["fleet"]["outbox"]["parked"], 0);
  // The empty file came along with each shard, verification flag and all.
  EXPECT_EQ(promoted.one("SELECT count(*) FROM dedupd.file WHERE hash = '\\x" + std::string(64, '0') + "'"), "1");
}

// An index written by c91351c, whose publisher acknowledged the three shards
// it could not rebuild (tests/fixtures/index-v2): upgraded in place, and the
// first anti-entropy pass publishes what the fleet lacks.
TEST_F(Fleet, AnIndexOfC91351cWhoseOutboxSkippedShardsIsUpgradedAndTheyReachTheFleet) {
  Cluster& pg = Cluster::shared();
  std::string url = pg.primary_url(pg.new_database());
  Host& a = add_host("host-a", url);
  Host& b = add_host("host-b", url);
  fs::create_directories(a.dir / "state" / "index");
  fs::copy_file(fs::path(DEDUPD_FIXTURE_DIR) / "index-v2" / "data.mdb", a.dir / "state" / "index" / "data.mdb");
  a.start();
  b.start();
  Admin admin(url);
  // The first chunk of each skipped shard's xorb (js, local, plain), asked on B.
  for (std::uint64_t seed : {1, 2, 3}) {
    shard::Hash chunk = index::gen::gen_xorb(seed, 10).raw[0];
    ASSERT_TRUE(eventually([&] { return fleet_holders(b, chunk) == std::set<std::string>{"host-a"}; }))
        << "the shard of xorb seed " << seed << " never reached the fleet";
  }
  // Nothing missing, nothing extra: the fleet lists A's live shards.
  ASSERT_TRUE(eventually([&] {
    json st = a.status();
    return a.outbox_depth() == 0 && st["fleet"]["anti_entropy"]["passes"].get<std::uint64_t>() >= 1 &&
           admin.one(
               "SELECT count(*) FROM dedupd.hold h JOIN dedupd.host o ON o.id = h.host_id WHERE o.name = "
               "'host-a'") == a.http().get("/v1/stats").json()["shards"]["live"].dump();
  }));
  json st = a.status();
  EXPECT_GE(st["fleet"]["anti_entropy"]["published"].get<std::uint64_t>(), 3u);
  EXPECT_EQ(st["fleet"]["outbox"]["parked"], 0);
  EXPECT_NE(a.log_text().find("anti-entropy: the fleet disagreed"), std::string::npos);
  std::string out, err;
  EXPECT_EQ(dedupctl(a, {"fleet", "status"}, &out, &err), 0) << out << err;
}

// pg_dump, changes on every host, pg_restore of the dump (the fleet goes
// back in time while the hosts run): every host heals the fleet, nothing
// missing, nothing extra. A batch of 2 makes each pass several rounds.
TEST_F(Fleet, AFleetDatabaseRestoredToAnEarlierDumpIsHealedByEveryHost) {
  Cluster& pg = Cluster::shared();
  std::string url = pg.primary_url(pg.new_database());
  const std::string fast = "  reconcile_interval: 1s\n  reconcile_batch: 2\n";
  Host& a = add_host("host-a", url, "200ms", fast);
  Host& b = add_host("host-b", url, "200ms", fast);
  Host& c = add_host("host-c", url, "200ms", fast);
  for (Host* h : {&a, &b, &c}) h->start();
  std::vector<MadeShard> s;
  for (std::uint64_t i = 0; i < 7; ++i)
    s.push_back(make_shard({.seed = 1501 + i, .xorbs = 1, .chunks_per_xorb = 3, .client_style = true}));
  drop_file(a.incoming, s[1].file_name(), s[1].bytes);
  drop_file(a.incoming, s[6].file_name(), s[6].bytes);
  drop_file(b.incoming, s[2].file_name(), s[2].bytes);
  drop_file(c.incoming, s[3].file_name(), s[3].bytes);
  drop_file(c.incoming, s[5].file_name(), s[5].bytes);
  Admin admin(url);
  std::set<std::string> before{hold_of("host-a", s[1].file_hash), hold_of("host-a", s[6].file_hash),
                               hold_of("host-b", s[2].file_hash), hold_of("host-c", s[3].file_hash),
                               hold_of("host-c", s[5].file_hash)};
  ASSERT_TRUE(eventually([&] { return fleet_holds(admin) == before; }));
  const fs::path dump = root / "fleet.dump";
  ASSERT_EQ(run("pg_dump -Fc -d '" + url + "' -f " + dump.string()), 0);

  // After the dump: a new shard on A, B's only shard removed, C holds A's too.
  drop_file(a.incoming, s[4].file_name(), s[4].bytes);
  EXPECT_EQ(b.http().del("/v1/shard/" + s[2].file_hash.to_string()).status, 200);
  drop_file(c.incoming, s[1].file_name(), s[1].bytes);
  std::set<std::string> now{hold_of("host-a", s[1].file_hash), hold_of("host-a", s[4].file_hash),
                            hold_of("host-a", s[6].file_hash), hold_of("host-c", s[1].file_hash),
                            hold_of("host-c", s[3].file_hash), hold_of("host-c", s[5].file_hash)};
  ASSERT_TRUE(eventually([&] { return fleet_holds(admin) == now; }));

  ASSERT_EQ(run("pg_restore --clean --if-exists --single-transaction -d '" + url + "' " + dump.string()), 0);
  // Healed by the hosts' anti-entropy: A publishes s4, B drops s2 (which
  // leaves the fleet with it), C publishes its hold on s1.
  ASSERT_TRUE(eventually([&] { return fleet_holds(admin) == now; }, std::chrono::seconds(120)))
      << ::testing::PrintToString(fleet_holds(admin));
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.shard"), "5");
  EXPECT_EQ(admin.one("SELECT count(*) FROM dedupd.shard WHERE hash = '\\x" + s[2].file_hash.to_hex_bytes() + "'"),
            "0");
  // Each pass logs its corrections when it ends, which may be after the
  // fleet already took them (a pass of several rounds).
  for (Host* h : {&a, &b, &c})
    EXPECT_TRUE(eventually([&] {
      return h->log_text().find("anti-entropy: the fleet disagreed") != std::string::npos;
    })) << h->name;
  // Every host answers the new shard's chunks from the fleet again.
  EXPECT_EQ(fleet_holders(b, s[4].first_chunks[0]), std::set<std::string>{"host-a"});
}

// A shard whose index record is damaged cannot be rebuilt: it is parked with
// its reason (never acknowledged), shown by status, --json and /metrics, and
// queued again on `dedupctl fleet retry` and at each start.
TEST_F(Fleet, AShardThatCannotBePublishedIsParkedShownAndRetried) {
  Cluster& pg = Cluster::shared();
  std::string url = pg.primary_url(pg.new_database());
  // The record damaged below is what this test parks; the scrub would find
  // it too and rebuild the whole index (DamageTest covers that), so it is off.
  Host& a = keep(std::make_unique<Host>(root, "host-a"));
  a.write_config(url, {.lookup_timeout = "200ms",
                       .fleet_extra = "",
                       .log_level = "debug",
                       .extra = "index:\n  scrub_interval: never\n"});
  MadeShard good = make_shard({.seed = 1601, .xorbs = 1, .chunks_per_xorb = 3, .client_style = true});
  MadeShard bad = make_shard({.seed = 1602, .xorbs = 1, .chunks_per_xorb = 3, .client_style = true});
  index_with_a_damaged_file_record(a.dir / "state" / "index", {&good, &bad}, bad);
  a.start();
  Admin admin(url);
  auto parked = [&] { return a.status()["fleet"]["outbox"]["parked"].get<std::uint64_t>(); };
  ASSERT_TRUE(eventually([&] { return parked() == 1 && a.outbox_depth() == 0; }));
  EXPECT_EQ(fleet_holds(admin), std::set<std::string>{hold_of("host-a", good.file_hash)});
  std::string out, err;
  EXPECT_EQ(dedupctl(a, {"fleet", "status"}, &out, &err), 1) << out << err;
  EXPECT_NE(out.find(bad.file_hash.to_string()), std::string::npos) << out;
  EXPECT_NE(out.find("index.corrupt"), std::string::npos) << out;
  EXPECT_NE(err.find("1 outbox entry is parked"), std::string::npos) << err;
  EXPECT_EQ(dedupctl(a, {"fleet", "status", "--json"}, &out, &err), 1) << out << err;
  json doc = json::parse(out);
  ASSERT_EQ(doc["this_host"]["parked"].size(), 1u);
  EXPECT_EQ(doc["this_host"]["parked"][0]["shard"], bad.file_hash.to_string());
  EXPECT_EQ(doc["this_host"]["parked"][0]["op"], "publish");
  EXPECT_NE(a.http().get("/metrics").body.find("\ndedupd_fleet_parked 1\n"), std::string::npos);
  auto parks = [&] {
    std::string log = a.log_text();
    std::size_t n = 0;
    for (std::size_t at = 0; (at = log.find("parked, not acknowledged", at)) != std::string::npos; ++at) ++n;
    return n;
  };
  EXPECT_EQ(parks(), 1u);
  // Retried on request: still damaged, so parked again.
  EXPECT_EQ(dedupctl(a, {"fleet", "retry"}, &out, &err), 0) << err;
  EXPECT_EQ(out, "1 parked outbox entry queued again\n");
  ASSERT_TRUE(eventually([&] { return parks() == 2u && parked() == 1; }));
  // And at the next start.
  a.process.kill_hard();
  a.start();
  ASSERT_TRUE(eventually([&] { return parks() == 3u && parked() == 1; }));
  // Anti-entropy never queues a parked shard again by itself.
  EXPECT_EQ(fleet_holds(admin), std::set<std::string>{hold_of("host-a", good.file_hash)});
}

}  // namespace
}  // namespace dedupd::itest
