// Files arriving in watched directories: when they are taken, what happens
// to bad ones, and that nothing is lost or doubled across a kill -9.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "harness/daemon_test.hpp"
#include "harness/make_shard.hpp"
#include "shard/caf.hpp"

namespace dedupd::itest {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

using Ingest = DaemonTest;

std::string hash_of(const MadeShard& s) { return s.first_chunks.at(0).to_string(); }

TEST_F(Ingest, AFileWrittenSlowlyInPlaceIsTakenOnlyWhenClosed) {
  start();
  auto shard = make_shard({.seed = 1, .xorbs = 4, .chunks_per_xorb = 64});
  auto path = incoming / shard.file_name();
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  std::size_t half = shard.bytes.size() / 2;
  ASSERT_EQ(::write(fd, shard.bytes.data(), half), ssize_t(half));

  // A marker dropped after the first half: once the daemon has taken it,
  // it has seen every event of the half-written file too.
  auto marker = make_shard({.seed = 2});
  drop_file(incoming, marker.file_name(), marker.bytes);
  ASSERT_TRUE(eventually([&] { return chunk_found(hash_of(marker)); }));
  EXPECT_FALSE(chunk_found(hash_of(shard)));
  EXPECT_EQ(shard_count("rejected"), 0u) << "the incomplete file was read";

  ASSERT_EQ(::write(fd, shard.bytes.data() + half, shard.bytes.size() - half), ssize_t(shard.bytes.size() - half));
  ::close(fd);
  EXPECT_TRUE(eventually([&] { return chunk_found(hash_of(shard)); }));
  EXPECT_EQ(shard_count("rejected"), 0u);
  EXPECT_EQ(shard_count("live"), 2u);
}

TEST_F(Ingest, ATempFileRenamedIntoPlaceIsTakenOnce) {
  start();
  auto shard = make_shard({.seed = 3});
  drop_file(incoming, shard.file_name(), shard.bytes);
  ASSERT_TRUE(eventually([&] { return chunk_found(hash_of(shard)); }));
  auto shards = get_json("/v1/shards")["shards"];
  ASSERT_EQ(shards.size(), 1u);
  EXPECT_EQ(shards[0]["hash"], shard.file_hash.to_string());
  ASSERT_EQ(shards[0]["paths"].size(), 1u);
  EXPECT_EQ(shards[0]["paths"][0], (incoming / shard.file_name()).string());
  auto metrics = http().get("/metrics").body;
  EXPECT_NE(metrics.find("dedupd_shards_ingested_total 1"), std::string::npos) << metrics;
}

TEST_F(Ingest, NewSubdirectoriesAreWatched) {
  start();
  fs::create_directories(incoming / "hf.co/shard-cache");
  auto shard = make_shard({.seed = 4});
  drop_file(incoming / "hf.co/shard-cache", shard.file_name(), shard.bytes);
  EXPECT_TRUE(eventually([&] { return chunk_found(hash_of(shard)); }));
}

TEST_F(Ingest, CorruptFilesAreRejectedListedAndNotRetriedUntilChanged) {
  start();
  auto good = make_shard({.seed = 5});
  std::vector<std::uint8_t> garbage(300, 0x41);
  std::vector<std::uint8_t> truncated(good.bytes.begin(), good.bytes.begin() + good.bytes.size() / 2);
  auto other = make_shard({.seed = 6});
  drop_file(incoming, "garbage.mdb", garbage);
  drop_file(incoming, "truncated.mdb", truncated);
  drop_file(incoming, other.file_name(), good.bytes);  // content does not match the name
  ASSERT_TRUE(eventually([&] { return shard_count("rejected") == 3; }));

  auto rejected = get_json("/v1/shards?state=rejected")["shards"];
  for (const auto& r : rejected) {
    EXPECT_EQ(r["state"], "rejected");
    ASSERT_TRUE(r.contains("reason")) << r.dump();
    EXPECT_FALSE(r["reason"]["rule"].get<std::string>().empty());
    EXPECT_TRUE(r["reason"].contains("offset"));
  }
  EXPECT_EQ(http().get("/healthz").status, 200);

  // Root may rescan; nothing changed, so nothing is rejected again.
  auto rescan = http().post("/v1/admin/rescan", "");
  ASSERT_EQ(rescan.status, 200) << rescan.body;
  EXPECT_EQ(rescan.json()["rejected"], 0);
  EXPECT_EQ(rescan.json()["scanned"], 3);

  // Fixed in place: taken.
  drop_file(incoming, "garbage.mdb", good.bytes);
  EXPECT_TRUE(eventually([&] { return chunk_found(hash_of(good)); }));
  EXPECT_EQ(shard_count("live"), 1u);
}

TEST_F(Ingest, RejectedFilesAreQuarantinedWhenConfigured) {
  write_config("quarantine_dir: " + (dir / "quarantine").string() + "\n");
  start();
  drop_file(incoming, "bad.mdb", std::vector<std::uint8_t>(100, 7));
  ASSERT_TRUE(eventually([&] { return fs::exists(dir / "quarantine/bad.mdb"); }));
  EXPECT_FALSE(fs::exists(incoming / "bad.mdb"));
  // The daemon moves the file before it records the rejection: wait for both.
  EXPECT_TRUE(eventually([&] { return shard_count("rejected") == 1u; })) << shard_count("rejected");
}

TEST_F(Ingest, HundredShardsAcrossAKillNineAreEachIndexedOnce) {
  start();
  std::vector<MadeShard> shards;
  for (int i = 0; i < 100; ++i) shards.push_back(make_shard({.seed = 1000u + i, .xorbs = 2, .chunks_per_xorb = 50}));
  for (int i = 0; i < 100; ++i) {
    if (i == 40) daemon.kill_hard();  // mid-stream, whatever it was doing
    drop_file(incoming, shards[i].file_name(), shards[i].bytes);
  }
  start();
  ASSERT_TRUE(eventually([&] { return shard_count("live") == 100; }, 90s)) << shard_count("live");
  auto stats = get_json("/v1/stats");
  EXPECT_EQ(stats["chunks"], 100 * 2 * 50);
  EXPECT_EQ(stats["xorbs"], 100 * 2);
  auto listed = get_json("/v1/shards");  // a range-for over a temporary's member would dangle
  for (const auto& s : listed["shards"]) EXPECT_EQ(s["paths"].size(), 1u);
  for (const auto& s : shards) EXPECT_TRUE(chunk_found(hash_of(s)));
}

TEST_F(Ingest, AnUploadedShardIsIngested) {
  start();
  auto shard = make_shard({.seed = 7});
  auto r = http().post("/v1/admin/ingest?name=" + shard.file_name(),
                       std::string(shard.bytes.begin(), shard.bytes.end()), "application/octet-stream");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["shards"][0]["added"], true);
  EXPECT_TRUE(chunk_found(hash_of(shard)));
  auto bad = http().post("/v1/admin/ingest", "not a shard", "application/octet-stream");
  EXPECT_EQ(bad.status, 422) << bad.body;

  // Removal takes its entries out at once.
  auto removed = http().del("/v1/shard/" + shard.file_hash.to_string());
  ASSERT_EQ(removed.status, 200) << removed.body;
  EXPECT_FALSE(chunk_found(hash_of(shard)));
  EXPECT_EQ(shard_count("removed"), 1u);
}

TEST_F(Ingest, BundleMembersAreIngestedOneByOne) {
  start();
  auto a = make_shard({.seed = 81});
  auto b = make_shard({.seed = 82});
  std::vector<std::uint8_t> junk(64, 9);
  std::string a_name = a.file_name(), b_name = b.file_name();
  std::vector<shard::caf::MemberInput> members{
      {a_name, a.bytes}, {"broken.mdb", junk}, {b_name, b.bytes}, {"README.txt", junk}};
  auto bundle = shard::caf::write_bundle(members);
  ASSERT_TRUE(bundle.ok()) << bundle.error().to_string();
  drop_file(incoming, "shards.caf", *bundle);
  ASSERT_TRUE(eventually([&] { return chunk_found(hash_of(a)) && chunk_found(hash_of(b)); }));
  ASSERT_TRUE(eventually([&] { return shard_count("rejected") == 1; }));
  auto rejected = get_json("/v1/shards?state=rejected")["shards"];
  EXPECT_EQ(rejected[0]["paths"][0], (incoming / "shards.caf#broken.mdb").string()) << rejected.dump();

  // The same bundle uploaded: the broken member fails the whole upload.
  auto r = http().post("/v1/admin/ingest?name=x.caf", std::string(bundle->begin(), bundle->end()),
                       "application/octet-stream");
  EXPECT_EQ(r.status, 422) << r.body;
}

TEST_F(Ingest, NonAdminCallerGets403OnAdminRoutes) {
  start();
  ::chmod(socket.c_str(), 0666);
  auto as_nobody = [&](const std::string& method, const std::string& path) {
    std::string cmd =
        "setpriv --reuid=nobody --regid=nogroup --clear-groups curl -s -o /dev/null "
        "-w '%{http_code}' --unix-socket '" +
        socket.string() + "' -X " + method + " http://localhost" + path + " 2>&1";
    std::string out;
    if (FILE* p = ::popen(cmd.c_str(), "r")) {
      char buf[256];
      while (std::fgets(buf, sizeof buf, p)) out += buf;
      ::pclose(p);
    }
    return out;
  };
  EXPECT_EQ(as_nobody("POST", "/v1/admin/rescan"), "403");
  EXPECT_EQ(as_nobody("POST", "/v1/admin/purge"), "403");
  EXPECT_EQ(as_nobody("GET", "/v1/stats"), "200");             // reads are for anyone who can connect
  EXPECT_EQ(http().post("/v1/admin/rescan", "").status, 200);  // root
}

}  // namespace
}  // namespace dedupd::itest
