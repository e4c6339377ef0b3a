// kill -9 at random instants while dedupd ingests: after every kill the
// index on disk holds each shard whole or not at all, its invariants hold,
// and every shard an upload acknowledged (200) is there. At the end a
// restarted daemon indexes everything exactly once.
//
// DEDUPD_RELIABILITY_KILLS sets the number of kills (default 30, what CI
// runs); DEDUPD_RELIABILITY_SEED replays a run (the seed is printed).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <set>
#include <thread>

#include "harness/daemon_test.hpp"
#include "harness/notify_socket.hpp"
#include "support.hpp"

namespace dedupd::reliability {
namespace {

using namespace std::chrono_literals;
using itest::DaemonTest;

class CrashTest : public DaemonTest {};

TEST_F(CrashTest, KillNineAtRandomInstantsLeavesWholeShardsOnly) {
  const long kills = env_long("DEDUPD_RELIABILITY_KILLS", 30);
  std::uint64_t seed = std::uint64_t(env_long("DEDUPD_RELIABILITY_SEED", long(std::random_device{}() & 0x7fffffff)));
  std::printf("crash test: %ld kills, DEDUPD_RELIABILITY_SEED=%llu\n", kills, (unsigned long long)seed);
  std::mt19937_64 rng(seed);

  // Big enough that an ingest takes a while (the kill lands inside it), and
  // past the index's merge threshold after a few dozen shards.
  std::uint64_t next_seed = seed * 1000;
  auto make = [&] {
    std::uint32_t xorbs = 1 + std::uint32_t(rng() % 3);
    std::uint32_t per = 2048 + std::uint32_t(rng() % 4096);
    return itest::make_shard({.seed = ++next_seed, .xorbs = xorbs, .chunks_per_xorb = per});
  };
  std::vector<KnownShard> all;
  std::set<std::string> acknowledged;
  const auto index_dir = dir / "state" / "index";
  itest::NotifySocket notify(dir / "notify.sock");

  // The kills are paced by this machine's speed now, measured once per run
  // (a sanitized daemon on a busy machine is many times slower than a plain
  // one on an idle machine): how long the daemon takes to get ready, and to
  // ingest one shard of the kind the rounds make.
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  start();
  const auto ready_time = Clock::now() - t0;
  {
    auto s = make();
    all.push_back(known(s));
    t0 = Clock::now();
    itest::drop_file(incoming, s.file_name(), s.bytes);
    ASSERT_TRUE(eventually([&] { return shard_count("live") == 1; }, 120s));
  }
  const auto ingest_time = Clock::now() - t0;
  ASSERT_EQ(daemon.stop(), 0);
  std::printf("crash test: ready in %lld ms, one shard ingested in %lld ms\n",
              (long long)std::chrono::duration_cast<std::chrono::milliseconds>(ready_time).count(),
              (long long)std::chrono::duration_cast<std::chrono::milliseconds>(ingest_time).count());
  // A random instant in [0, span).
  auto some_time_within = [&](Clock::duration span) {
    auto us = std::max<std::int64_t>(1, std::chrono::duration_cast<std::chrono::microseconds>(span).count());
    return std::chrono::microseconds(std::int64_t(rng() % std::uint64_t(us)));
  };

  std::size_t max_live = 0, kills_in_flux = 0, kills_mid_progress = 0;
  for (long k = 0; k < kills; ++k) {
    int mode = int(k % 3);
    if (mode == 0)  // files waiting before the start: the start-up scan ingests them
      for (int i = 0; i < 2; ++i) {
        auto s = make();
        all.push_back(known(s));
        itest::drop_file(incoming, s.file_name(), s.bytes);
      }
    notify.wait_for("(drain what the previous run sent)", 5ms);
    start_no_wait({}, {notify.env()});
    std::thread uploader;
    std::optional<std::string> upload_hash;
    bool upload_ok = false;
    if (mode == 0) {  // during the start, its scan, or the two ingests
      std::this_thread::sleep_for(some_time_within(ready_time + 2 * ingest_time));
    } else {
      ASSERT_TRUE(notify.wait_for("READY=1", 30s)) << "no READY after kill " << k;
      if (mode == 1) {  // files appearing while it runs: inotify
        for (int i = 0; i < 2; ++i) {
          auto s = make();
          all.push_back(known(s));
          itest::drop_file(incoming, s.file_name(), s.bytes);
        }
      } else {  // an upload through the socket, acknowledged or not
        auto s = make();
        all.push_back(known(s));
        upload_hash = s.file_hash.to_string();
        uploader = std::thread([this, bytes = std::move(s.bytes), &upload_ok] {
          itest::HttpClient c(socket.string());
          std::string body(bytes.begin(), bytes.end());
          upload_ok = c.post("/v1/admin/ingest", body, "application/octet-stream").status == 200;
        });
      }
      // Files: mostly inside the ingest, now and then late enough that it is
      // done. Uploads wait behind the files already queued: a wider window,
      // so some are acknowledged before the kill and some are not.
      const int ingests = mode == 2 ? 8 : k % 4 == 3 ? 10 : 2;
      std::this_thread::sleep_for(some_time_within(ingests * ingest_time));
    }
    daemon.kill_hard();
    if (uploader.joinable()) uploader.join();
    if (upload_ok) acknowledged.insert(*upload_hash);

    IndexReport rep = inspect_index(index_dir, all);
    for (const auto& p : rep.problems) ADD_FAILURE() << "after kill " << k << " (mode " << mode << "): " << p;
    ASSERT_TRUE(rep.problems.empty()) << "replay with DEDUPD_RELIABILITY_SEED=" << seed;
    std::set<std::string> live;
    for (const auto& h : rep.live_hashes) live.insert(h.to_string());
    for (const auto& a : acknowledged)
      ASSERT_TRUE(live.count(a)) << "an acknowledged upload is gone after kill " << k << ": " << a;
    std::size_t files_waiting = 0;  // dropped files not indexed yet: the kill left work undone
    for (const auto& s : all)
      if (!live.count(s.hash.to_string()) && std::filesystem::exists(incoming / (s.hash.to_string() + ".mdb")))
        ++files_waiting;
    if (files_waiting) ++kills_in_flux;
    if (rep.live > max_live && files_waiting) ++kills_mid_progress;  // some of the round done, some not
    max_live = std::max(max_live, rep.live);
  }
  std::printf(
      "crash test: %ld kills: %zu with shards still unindexed at the kill, %zu of those after some "
      "progress; %zu shards made, %zu uploads acknowledged\n",
      kills, kills_in_flux, kills_mid_progress, all.size(), acknowledged.size());

  // Restart: what is left gets indexed, each shard exactly once. Uploads
  // that were not acknowledged may be missing; files must not be.
  start();
  std::size_t expected_files = 0;
  for (const auto& s : all)
    if (std::filesystem::exists(incoming / (s.hash.to_string() + ".mdb"))) ++expected_files;
  ASSERT_TRUE(eventually([&] { return shard_count("live") >= expected_files + acknowledged.size(); }, 120s))
      << shard_count("live") << " live shards, expected at least " << expected_files + acknowledged.size();
  std::size_t queried = 0;
  for (const auto& s : all) {
    bool is_file = std::filesystem::exists(incoming / (s.hash.to_string() + ".mdb"));
    bool must = is_file || acknowledged.count(s.hash.to_string());
    std::string body = "{\"hashes\":[";
    for (std::size_t i = 0; i < s.chunks.size(); ++i) body += (i ? ",\"" : "\"") + s.chunks[i].to_string() + "\"";
    body += "]}";
    auto r = http().post("/v1/chunk", body);
    ASSERT_EQ(r.status, 200) << r.body.substr(0, 300);
    auto j = r.json();
    std::size_t found = j["found"].get<std::size_t>();
    if (must) {
      EXPECT_EQ(found, s.chunks.size()) << s.hash.to_string();
    }
    EXPECT_TRUE(found == 0 || found == s.chunks.size()) << "half a shard: " << s.hash.to_string();
    for (const auto& res : j["results"]) {
      if (!res["found"].get<bool>()) continue;
      ASSERT_EQ(res["locations"].size(), 1u);
      ASSERT_EQ(res["locations"][0]["shards"].size(), 1u);
      EXPECT_EQ(res["locations"][0]["shards"][0]["shard"], s.hash.to_string());
    }
    queried += s.chunks.size();
  }
  EXPECT_EQ(daemon.stop(), 0);
  IndexReport rep = inspect_index(index_dir, all);
  for (const auto& p : rep.problems) ADD_FAILURE() << "after the final run: " << p;
  std::printf("crash test: after restart %zu shards live, %zu chunk entries, %zu chunks queried through the socket\n",
              rep.live, std::size_t(rep.chunk_entries), queried);
}

}  // namespace
}  // namespace dedupd::reliability
