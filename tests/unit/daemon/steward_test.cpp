// CacheSteward::run itself, over a real client cache (real shard files in a
// temp dir, a real LMDB index that took them), with fakes only for what it
// probes: the clocks, the process table, the client's logs and the failures
// of the file system. Each test names the finding of issue 30 it covers and
// what the steward at fd0e0e3 did instead.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <set>

#include "daemon/xetcache/steward.hpp"
#include "index/index.hpp"
#include "shard/reader.hpp"
#include "test_support.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/unit/daemon/steward_fakes.hpp"
#include "xetcache/layout.hpp"
#include "xetcache/merge.hpp"

namespace dedupd::daemon::xetcache {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

using namespace steward_fakes;

class StewardRun : public ::testing::Test {
 public:
  void SetUp() override {
    root = tmp / "xet";
    shard_cache = root + "/hub/shard-cache";
    state = tmp / "state";
    fs::create_directories(shard_cache);
    fs::create_directories(state);
    index::Options o;
    o.dir = tmp / "idx";
    auto opened = index::Index::open(o);
    ASSERT_TRUE(opened) << opened.error().to_string();
    idx = std::move(*opened);
    config.replaced_grace = 1h;
    // One client ran a month ago and ended: what is alive can be told.
    files.logs = {{log_name(std::int64_t(kWall) - 30 * 86400, 0, 999), kWall - 30 * 86400}};
  }

  std::unique_ptr<CacheSteward> steward(const std::string& state_dir = {}) {
    StewardOptions o;
    o.state_dir = state_dir.empty() ? state : state_dir;
    o.consolidation.min_small_shards = 2;
    auto s = std::make_unique<CacheSteward>(*idx, o, StewardProbes{&clock, &procs, &files});
    s->configure({fs::path(root)}, config);
    return s;
  }

  // A small exported-upload shard of its own content; `day` picks the
  // expiry day, so shards of different days merge in different groups.
  std::vector<std::uint8_t> shard_bytes(std::uint64_t seed, std::int64_t day = 30, const shard::Key& key = {},
                                        bool verification = true) {
    auto x = shard::testing::make_xorb(seed * 10 + 1, 4, key);
    shard::ShardWriter w;
    w.add_file(shard::testing::make_file(seed * 10 + 2, {{&x, 0, 4}}, verification, true));
    w.add_xorb(x.record);
    shard::WriteOptions wo;
    wo.lookup_tables = shard::LookupTables::build;
    wo.derive_byte_totals = true;
    wo.footer.chunk_hash_key = key;
    wo.footer.creation_timestamp = kWall - 1000 + seed;
    wo.footer.key_expiry = std::uint64_t(std::int64_t(kWall) + day * 86400 + 3600);
    return w.write(wo);
  }

  // Written as the client names it, and indexed as the watcher would.
  std::string add(const std::vector<std::uint8_t>& bytes) {
    std::string path = shard_cache + "/" + shard::shard_file_hash(bytes).to_string() + ".mdb";
    tests::write_file(path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    ingest(path);
    return path;
  }
  std::string add(std::uint64_t seed, std::int64_t day = 30) { return add(shard_bytes(seed, day)); }
  // One last written `age` ago (real time: the steward reads real mtimes).
  std::string add_aged(std::uint64_t seed, std::chrono::seconds age) {
    const auto bytes = shard_bytes(seed);
    std::string path = shard_cache + "/" + shard::shard_file_hash(bytes).to_string() + ".mdb";
    tests::write_file(path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    fs::last_write_time(path, fs::last_write_time(path) - age);
    ingest(path);
    return path;
  }

  // dedupd killed at `when` in its first merge, of three shards (their
  // paths): what a restarted steward has to recover from.
  std::array<std::string, 3> kill_first_merge(FakeFiles::Kill when) {
    std::array<std::string, 3> added{add(1), add(2), add(3)};
    files.kill = when;
    auto s = steward();
    EXPECT_THROW(s->run(), Killed);
    return added;
  }

  shard::Hash ingest(const std::string& path) {
    auto bytes = shard::testing::read_file(path);
    auto view = shard::ShardView::parse(bytes);
    EXPECT_TRUE(view) << view.error().to_string();
    struct stat st {};
    EXPECT_EQ(::stat(path.c_str(), &st), 0);
    index::SourceInfo src{path, std::uint64_t(st.st_size),
                          std::int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
    auto r = idx->ingest(*view, src, {.now = kWall});
    EXPECT_TRUE(r) << r.error().to_string();
    return r ? r->shard : shard::Hash{};
  }

  // What the watcher does between passes: index the merged files.
  void ingest_new() {
    for (const auto& p : shard_files()) {
      auto known = idx->source(p);
      if (known && !*known) ingest(p);
    }
  }

  std::vector<std::string> shard_files() const {
    auto listed = dedupd::xetcache::list_shard_files(shard_cache);
    std::vector<std::string> out;
    for (const auto& f : *listed) out.push_back(f.path);
    return out;
  }
  bool exists(const std::string& p) const { return fs::exists(fs::symlink_status(p)); }

  // A client that started `ago` seconds ago at `offset_minutes` from UTC,
  // running with the start ticks /proc would show.
  void live_client(pid_t pid, std::int64_t ago, int offset_minutes) {
    const std::int64_t started = std::int64_t(clock.wall) - ago;
    files.logs.push_back({log_name(started, offset_minutes, pid), clock.wall});
    procs.running[pid] = {true, std::uint64_t(started - kBoot) * kHz - 30};  // its log comes a moment later
  }

  core::XetCacheStatus status_of(const CacheSteward& s) const {
    for (const auto& st : s.status())
      if (st.endpoint == root + "/hub") return st;
    ADD_FAILURE() << "no status for " << root << "/hub";
    return {};
  }

  tests::TempDir tmp{"steward"};
  std::string root, shard_cache, state;
  std::unique_ptr<index::Index> idx;
  FakeClock clock;
  FakeProcesses procs;
  FakeFiles files;
  config::XetCacheConfig config;
};

TEST_F(StewardRun, MergesThenDeletesTheOriginalsOnceNoClientRuns) {
  const auto a = add(1), b = add(2), c = add(3);
  auto s = steward();
  EXPECT_TRUE(s->run());
  EXPECT_EQ(files.writes, 1);
  EXPECT_EQ(shard_files().size(), 4u);  // the originals wait a pass
  EXPECT_EQ(status_of(*s).pending_deletions, 3u);
  EXPECT_TRUE(status_of(*s).liveness_established) << status_of(*s).liveness_why;
  ingest_new();
  clock.mono += 60;
  EXPECT_TRUE(s->run());
  EXPECT_FALSE(exists(a) || exists(b) || exists(c));
  EXPECT_EQ(shard_files().size(), 1u);
  EXPECT_EQ(status_of(*s).merged_away, 3u);
  EXPECT_EQ(files.writes, 1);
}

// Finding 1: fd0e0e3 read the log's local time as UTC; at -0500 a client
// that started 10 minutes ago seemed to start 5 h after its log, counted as
// a reused pid, and its shards were deleted under it.
TEST_F(StewardRun, AClientWestOfUtcIsAlive) {
  const auto a = add(1), b = add(2);
  live_client(4242, 600, -300);
  auto s = steward();
  s->run();
  ingest_new();
  clock.mono += 60;
  s->run();
  EXPECT_TRUE(exists(a) && exists(b));
  EXPECT_EQ(status_of(*s).live_clients, 1u);
  EXPECT_EQ(status_of(*s).client_pids, std::vector<std::int64_t>{4242});
  // A pid reused by a process that started after the log is not the client.
  procs.running[4242].start_ticks = std::uint64_t(std::int64_t(kWall) + 3600 - kBoot) * kHz;
  s.reset();  // a restart: the journal has the pending deletions
  auto fresh = steward();
  clock.mono += 60;
  fresh->run();
  EXPECT_FALSE(exists(a) || exists(b));
}

// Finding 1: fd0e0e3 measured the grace on the wall clock, so a step of it
// (NTP, a restored VM) ended the grace under a running client at once.
TEST_F(StewardRun, AWallClockStepDoesNotEndTheGrace) {
  const auto a = add(1), b = add(2);
  live_client(4242, 600, 60);
  auto s = steward();
  s->run();
  ingest_new();
  clock.wall += 2 * 3600;  // the wall clock jumps; only 10 s really pass
  clock.mono += 10;
  for (auto& l : files.logs) l.mtime_s += 2 * 3600;
  s->run();
  EXPECT_TRUE(exists(a) && exists(b)) << "deleted under a live client after a clock step";
  EXPECT_EQ(status_of(*s).live_clients, 1u);  // the same start ticks: the same process
  clock.mono += 3600;                         // the grace, really over
  s->run();
  EXPECT_FALSE(exists(a) || exists(b));
}

// Finding 2: fd0e0e3 decided there were no clients whenever it could not see
// them, and deleted the originals at the next pass.
TEST_F(StewardRun, UnknownLivenessKeepsOriginalsUntilTheGrace) {
  struct Case {
    const char* name;
    std::function<void(StewardRun&)> set;
    const char* why;
  };
  const std::vector<Case> cases = {
      {"no logs dir", [](StewardRun& t) { t.files.logs_err = ENOENT; }, "no logs/"},
      {"another user's logs", [](StewardRun& t) { t.files.logs_err = EACCES; }, "Permission denied"},
      {"nfs", [](StewardRun& t) { t.files.network = "nfs"; }, "network file system"},
      {"pid namespace", [](StewardRun& t) { t.procs.foreign = true; }, "pid namespace"},
      {"logs elsewhere", [](StewardRun& t) { t.files.logs.clear(); }, "no client log"},
      {"a client in another container",
       [](StewardRun& t) {
         const auto name = log_name(std::int64_t(kWall) - 86400, 0, 31337);
         t.files.logs.push_back({name, kWall - 86400, 10});  // old, but still written to
         t.files.growing_logs.insert(name);
       },
       "not running here"},
  };
  std::uint64_t seed = 1;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    files = FakeFiles{};
    files.logs = {{log_name(std::int64_t(kWall) - 30 * 86400, 0, 999), kWall - 30 * 86400}};
    procs.foreign = false;
    c.set(*this);
    for (const auto& p : shard_files()) fs::remove(p);
    const auto a = add(seed++), b = add(seed++);
    auto s = steward();
    s->run();
    EXPECT_EQ(files.writes, 1) << "merges may still write";
    ingest_new();
    clock.mono += 600;
    s->run();
    EXPECT_TRUE(exists(a) && exists(b));
    const auto st = status_of(*s);
    EXPECT_FALSE(st.liveness_established);
    EXPECT_NE(st.liveness_why.find(c.why), std::string::npos) << st.liveness_why;
    clock.mono += 3600;
    s->run();
    EXPECT_FALSE(exists(a) || exists(b)) << "the grace is the bounded exception";
  }
}

// The other side of failing closed: a client the steward saw running, which
// then ended (writing its last log lines), lets the originals go at once; a
// log of an unknown pid written just before dedupd started holds them one
// pass, until it is seen not to grow.
TEST_F(StewardRun, AnEndedClientIsNoMystery) {
  const auto a = add(1), b = add(2);
  live_client(4242, 60, 0);
  const auto just_ended = log_name(std::int64_t(kWall) - 30, 0, 5151);
  files.logs.push_back({just_ended, kWall - 2, 10});
  auto s = steward();
  s->run();
  EXPECT_FALSE(status_of(*s).liveness_established);  // 5151: ended, or elsewhere?
  ingest_new();
  clock.mono += 1;
  s->run();
  EXPECT_TRUE(status_of(*s).liveness_established) << status_of(*s).liveness_why;
  EXPECT_TRUE(exists(a) && exists(b));  // 4242 runs
  procs.running.erase(4242);
  files.growing_logs.insert(files.logs[1].name);  // its last lines
  clock.mono += 1;
  s->run();
  EXPECT_TRUE(status_of(*s).liveness_established) << status_of(*s).liveness_why;
  EXPECT_FALSE(exists(a) || exists(b));
}

// Finding 2: the README promised eviction never takes from a running client;
// fd0e0e3's eviction did not check.
TEST_F(StewardRun, EvictionWaitsForLiveClients) {
  const auto old = add(1, 3), young = add(2, 40);
  config.max_bytes = fs::file_size(young) + 10;
  live_client(4242, 60, 0);
  auto s = steward();
  s->run();
  // They are of different days: no merge; over the byte cap, the one that
  // expires first should go, but a client runs.
  EXPECT_EQ(files.writes, 0);
  EXPECT_TRUE(exists(old));
  clock.mono += 3600;
  s->run();
  EXPECT_FALSE(exists(old));
  EXPECT_TRUE(exists(young));
  EXPECT_EQ(status_of(*s).evicted, 1u);
}

// Eviction fails closed as merges do: with the clients' logs unreadable,
// nothing is evicted before the grace.
TEST_F(StewardRun, EvictionWaitsWhenLivenessIsUnknown) {
  const auto old = add(1, 3), young = add(2, 40);
  config.max_bytes = fs::file_size(young) + 10;
  files.logs_err = EACCES;
  auto s = steward();
  s->run();
  EXPECT_FALSE(status_of(*s).liveness_established);
  EXPECT_TRUE(exists(old));
  clock.mono += 3600;
  s->run();
  EXPECT_FALSE(exists(old));
  EXPECT_TRUE(exists(young));
}

// The caps also take files of shards that expired in the index (dedupd's
// expiry may keep files: delete_after never); the client does not load
// them, so they go first. Caught by the real-client test of the caps.
TEST_F(StewardRun, TheCapsTakeExpiredShardsFirst) {
  const auto expired = add(1, -2);  // expired two days ago: recorded, not indexed
  const auto young = add(2, 40), old = add(3, 10);
  config.max_bytes = fs::file_size(young) + fs::file_size(old);
  auto s = steward();
  s->run();
  EXPECT_FALSE(exists(expired));
  EXPECT_TRUE(exists(young) && exists(old));
  EXPECT_EQ(status_of(*s).evicted, 1u);
}

// Finding 3: fd0e0e3 retried only the first group, for ever, and evicted
// nothing while any group was planned: the cache grew past its caps.
TEST_F(StewardRun, AFailingMergeIsHeldBackAndEvictionGoesOn) {
  add(1, 3);
  add(2, 3);
  const auto young = add(3, 40);
  add(4, 40);
  config.max_bytes = 3 * fs::file_size(young);
  files.write_errno = ENOSPC;
  auto s = steward();
  s->run();
  auto st = status_of(*s);
  ASSERT_EQ(st.held_back.size(), 2u);  // both groups tried, both held back
  EXPECT_NE(st.held_back[0].find("No space left on device"), std::string::npos) << st.held_back[0];
  EXPECT_EQ(st.evicted, 1u) << "eviction must not wait for a failing merge";
  // Backoff: the next pass does not try them again yet.
  files.write_errno = 0;
  clock.mono += 10;
  s->run();
  EXPECT_EQ(files.writes, 0);
  clock.mono += 600;
  s->run();
  EXPECT_EQ(files.writes, 1);
  EXPECT_TRUE(status_of(*s).held_back.empty());
}

// Finding 3: a file the steward cannot read (EIO, EACCES) or a group that
// cannot merge (a keyed group with mixed verification) blocked every later
// group at fd0e0e3.
TEST_F(StewardRun, OneBadFileOrGroupDoesNotStopTheOthers) {
  shard::Key key;
  key.bytes.fill(7);
  add(shard_bytes(1, 3, key, true));
  add(shard_bytes(2, 3, key, false));  // same key and day: one group, which cannot merge
  const auto bad = add(3, 10);
  add(4, 10);
  add(5, 10);
  const auto good1 = add(6, 20), good2 = add(7, 20);
  files.read_errno[bad] = EIO;
  auto s = steward();
  s->run();
  s->run();
  s->run();
  // The keyed group is held back for its mixed verification, the bad file
  // for its EIO; its day's other two and day 20 merge.
  EXPECT_EQ(files.writes, 2);
  const auto st = status_of(*s);
  const auto has = [&](const char* what) {
    return std::any_of(st.held_back.begin(), st.held_back.end(),
                       [&](const std::string& r) { return r.find(what) != std::string::npos; });
  };
  EXPECT_TRUE(has("verification_mixed"));
  EXPECT_TRUE(has("Input/output error"));
  EXPECT_TRUE(exists(bad));
  (void)good1;
  (void)good2;
}

// Finding 4: fd0e0e3 merged a shard an admin removed back into a merged
// file, which was then indexed and republished to the fleet.
TEST_F(StewardRun, ARemovedShardIsNeverMergedNorDeleted) {
  const auto a = add(1), b = add(2), c = add(3);
  auto removed = idx->source(b);
  ASSERT_TRUE(removed && *removed);
  ASSERT_TRUE(idx->remove((*removed)->shard, kWall));
  auto s = steward();
  s->run();
  ASSERT_EQ(files.writes, 1);
  ingest_new();
  clock.mono += 60;
  s->run();
  EXPECT_TRUE(exists(b)) << "the steward never deletes an admin-removed shard's file";
  EXPECT_FALSE(exists(a) || exists(c));
  EXPECT_EQ(status_of(*s).removed_kept, 1u);
  // The merged file holds a and c only: none of b's files came back.
  auto b_bytes = shard::testing::read_file(b);
  auto b_view = shard::ShardView::parse(b_bytes);
  ASSERT_TRUE(b_view);
  for (const auto& p : shard_files()) {
    if (p == b) continue;
    auto m = shard::testing::read_file(p);
    auto v = shard::ShardView::parse(m);
    ASSERT_TRUE(v);
    for (shard::FileBlock fb : v->files())
      for (shard::FileBlock gone : b_view->files()) EXPECT_NE(fb.hash(), gone.hash());
  }
}

// Finding 4, the other order: a shard removed after a merge already holds
// its content. fd0e0e3 deleted the other originals, so removing the merged
// shard too would lose their content. Now that merge counts as undone: its
// originals stay, the live ones merge again without the removed one, and the
// status names the merged shard for the admin to remove as well.
TEST_F(StewardRun, AShardRemovedAfterItsMergeKeepsTheOtherOriginals) {
  const auto a = add(1), b = add(2), c = add(3);
  live_client(4242, 60, 0);
  auto s = steward();
  s->run();
  ingest_new();
  ASSERT_EQ(status_of(*s).pending_deletions, 3u);
  ASSERT_TRUE(idx->remove((*idx->source(a))->shard, kWall));
  clock.mono += 1;
  s->run();
  auto st = status_of(*s);
  EXPECT_EQ(files.writes, 2);           // b and c, merged again without a
  EXPECT_EQ(st.pending_deletions, 2u);  // on that new merge
  EXPECT_TRUE(exists(b) && exists(c));
  ASSERT_EQ(st.holds_removed.size(), 1u);
  EXPECT_NE(st.holds_removed[0].find(a), std::string::npos) << st.holds_removed[0];
  const std::string merged = st.holds_removed[0].substr(0, st.holds_removed[0].find(' '));
  ASSERT_TRUE(exists(merged));
  ingest_new();
  // The admin removes the merged shard as asked.
  ASSERT_TRUE(idx->remove((*idx->source(merged))->shard, kWall));
  procs.running.clear();
  clock.wall += dedupd::xetcache::kRecentLogSeconds + 1;
  clock.mono += 1;
  s->run();
  EXPECT_TRUE(status_of(*s).holds_removed.empty());
  EXPECT_EQ(files.writes, 2);
  EXPECT_TRUE(exists(a) && exists(merged)) << "removed shards' files are left alone";
  EXPECT_FALSE(exists(b) || exists(c));
  EXPECT_EQ(status_of(*s).removed_kept, 2u);
}

// Rule 1 end to end: a file that is no longer the one dedupd indexed (the
// client or a user rewrote it since; here only its mtime moved) is not the
// steward's to delete. Its merge still stands for the other originals; it
// stays, as a pending original and under the caps alike.
TEST_F(StewardRun, AFileChangedSinceItWasIndexedIsNeverDeleted) {
  const auto a = add(1), b = add(2), c = add(3);
  live_client(4242, 60, 0);
  auto s = steward();
  s->run();  // a, b and c merge; the client keeps the originals
  ASSERT_EQ(status_of(*s).pending_deletions, 3u);
  ingest_new();
  fs::last_write_time(a, fs::last_write_time(a) + 10s);  // changed after it was indexed
  const auto other = add(4, 3);                          // expires first: the caps' first choice
  fs::last_write_time(other, fs::last_write_time(other) + 10s);
  config.max_chunk_entries = 12;  // the merged file's 12; `other` would be the one to go
  s->configure({fs::path(root)}, config);
  procs.running.clear();
  clock.wall += dedupd::xetcache::kRecentLogSeconds + 1;
  clock.mono += 60;
  s->run();
  EXPECT_TRUE(exists(a)) << "a merge original changed since it was indexed was deleted";
  EXPECT_FALSE(exists(b) || exists(c));
  EXPECT_TRUE(exists(other)) << "a file changed since it was indexed was evicted";
  EXPECT_EQ(status_of(*s).evicted, 0u);
}

// Found by the real-client soak at 076bda3: a merged file holding a removed
// shard's content was left out of eviction as well as out of merges. Under
// a chunk-entry cap it kept its room for good, and the newest shards were
// evicted in its place (content of +25..+57 s lost, of +0..+24 s kept).
TEST_F(StewardRun, AMergedFileHoldingRemovedContentIsEvictedInItsTurn) {
  const auto a = add_aged(1, 1h), b = add_aged(2, 1h), c = add_aged(3, 1h);
  live_client(4242, 60, 0);
  auto s = steward();
  s->run();  // a, b and c merge; the client keeps the originals
  ingest_new();
  ASSERT_TRUE(idx->remove((*idx->source(a))->shard, kWall));
  clock.mono += 1;
  s->run();  // that merge now holds a's content: b and c merge again
  ASSERT_EQ(status_of(*s).holds_removed.size(), 1u);
  const std::string held = status_of(*s).holds_removed[0].substr(0, status_of(*s).holds_removed[0].find(' '));
  ingest_new();
  procs.running.clear();
  clock.wall += dedupd::xetcache::kRecentLogSeconds + 1;
  clock.mono += 60;
  s->run();  // b and c go: their content is in the second merge
  ASSERT_FALSE(exists(b) || exists(c));
  const auto newest = add(4, 40);
  // 12 (a, b, c) + 8 (b, c) + 4: over a cap of 12 entries.
  config.max_chunk_entries = 12;
  s->configure({fs::path(root)}, config);
  clock.mono += 60;
  s->run();
  EXPECT_TRUE(exists(newest)) << "the newest shard was evicted while an older merged file stayed";
  EXPECT_FALSE(exists(held)) << "the merged file holding removed content kept its room";
  EXPECT_TRUE(status_of(*s).holds_removed.empty()) << "the status names a file that is gone";
  EXPECT_TRUE(exists(a)) << "removed shards' files are left alone";
  EXPECT_LE(status_of(*s).chunk_entries, 12u);
}

// A removed shard's file stays, and the client goes on loading it: its
// entries take room under the caps. Left out of the count, the cache stayed
// over its cap by every removed file (found with the soak's removal).
TEST_F(StewardRun, ARemovedShardCountsAgainstTheCaps) {
  const auto removed = add(1, 10), old = add(2, 20), young = add(3, 40);  // three days: no merge
  ASSERT_TRUE(idx->remove((*idx->source(removed))->shard, kWall));
  config.max_chunk_entries = 8;  // 4 entries each
  auto s = steward();
  s->run();
  EXPECT_TRUE(exists(removed)) << "removed shards' files are left alone";
  EXPECT_FALSE(exists(old)) << "the removed file's entries were not counted";
  EXPECT_TRUE(exists(young));
  const auto st = status_of(*s);
  EXPECT_EQ(st.chunk_entries, 8u);
  EXPECT_EQ(st.removed_kept, 1u);
}

// Finding 5: fd0e0e3 kept pending deletions in memory only; after a restart
// the originals stayed for good (and were merged again).
TEST_F(StewardRun, PendingDeletionsSurviveARestartAndAreCheckedAgain) {
  const auto a = add(1), b = add(2);
  live_client(4242, 60, 0);
  {
    auto s = steward();
    s->run();
    EXPECT_EQ(status_of(*s).pending_deletions, 2u);
  }
  ingest_new();
  procs.running.clear();  // the client ended while dedupd restarted, a while ago
  clock.wall += dedupd::xetcache::kRecentLogSeconds + 1;
  auto s = steward();
  s->run();
  EXPECT_EQ(files.writes, 1) << "the merge is not written again";
  EXPECT_FALSE(exists(a) || exists(b));
}

// Finding 5: fd0e0e3 deleted originals without checking that the merged
// file was still there.
TEST_F(StewardRun, OriginalsStayWhenTheMergedFileIsGone) {
  const auto a = add(1), b = add(2);
  live_client(4242, 60, 0);
  auto s = steward();
  s->run();
  std::vector<std::string> merged;
  for (const auto& p : shard_files())
    if (p != a && p != b) merged.push_back(p);
  ASSERT_EQ(merged.size(), 1u);
  fs::remove(merged[0]);  // the client pruned it, or a user did
  procs.running.clear();
  clock.mono += 60;
  s->run();
  EXPECT_TRUE(exists(a) && exists(b));
}

// Finding 5, the same rule: a merged file that is there but no longer
// verifies (truncated, overwritten) does not let its originals go.
TEST_F(StewardRun, OriginalsStayWhenTheMergedFileNoLongerVerifies) {
  const auto a = add(1), b = add(2);
  live_client(4242, 60, 0);
  auto s = steward();
  s->run();
  for (const auto& p : shard_files())
    if (p != a && p != b) tests::write_file(p, "not a shard any more");
  procs.running.clear();
  clock.wall += dedupd::xetcache::kRecentLogSeconds + 1;
  clock.mono += 60;
  s->run();
  EXPECT_TRUE(exists(a) && exists(b));
  // Ordinary members again, they merge anew: the broken file is replaced.
  EXPECT_EQ(files.writes, 2);
  EXPECT_EQ(status_of(*s).pending_deletions, 2u);
}

// Finding 5: when an original could not be deleted, fd0e0e3 wrote and
// fsync'd the same merged file again at every pass.
TEST_F(StewardRun, AnUndeletableOriginalDoesNotRewriteItsMerge) {
  const auto a = add(1), b = add(2);
  files.unlink_errno = EROFS;
  auto s = steward();
  for (int i = 0; i < 4; ++i) {
    s->run();
    ingest_new();
    clock.mono += 3600 * 24;
  }
  EXPECT_EQ(files.writes, 1);
  EXPECT_TRUE(exists(a) && exists(b));
  const auto st = status_of(*s);
  EXPECT_EQ(st.pending_deletions, 2u);
  EXPECT_GT(st.pending_bytes, 0u);
  EXPECT_FALSE(st.held_back.empty());
}

// Finding 5: fd0e0e3's caps left pending originals out (3.75 GiB over
// max_bytes seen): they still take the client's room until they go.
TEST_F(StewardRun, PendingOriginalsCountAgainstTheCaps) {
  const auto a = add(1), b = add(2);
  const auto other = add(3, 60);
  live_client(4242, 60, 0);
  auto s = steward();
  s->run();  // merges the two of day 30; the client keeps them pending
  ingest_new();
  // Room for the merged file and the other, not for the pending originals too.
  std::uint64_t all = 0;
  for (const auto& p : shard_files()) all += fs::file_size(p);
  config.max_bytes = all - 1;
  s->configure({fs::path(root)}, config);
  procs.running.clear();  // the client ended a while ago: the caps may act
  clock.wall += dedupd::xetcache::kRecentLogSeconds + 1;
  clock.mono += 60;
  files.unlink_errno_at = {{a, EBUSY}, {b, EBUSY}};  // and the originals cannot go
  s->run();
  EXPECT_TRUE(exists(a) && exists(b));
  // The merged file stays (evicting it would undo the merge its originals
  // wait on); the other shard makes the room.
  EXPECT_FALSE(exists(other)) << "the caps counted only what is not pending";
  EXPECT_EQ(shard_files().size(), 3u);
}

// Finding 5: two dedupd on one cache (a second instance, another host on
// NFS) both merged and deleted at fd0e0e3.
TEST_F(StewardRun, ASecondStewardStandsByAndSaysWhoHoldsTheCache) {
  add(1);
  add(2);
  auto first = steward();
  fs::create_directories(tmp / "state2");
  auto second = steward(tmp / "state2");  // another dedupd has its own state dir
  first->run();
  EXPECT_EQ(files.writes, 1);
  second->run();
  const auto st = second->status();
  ASSERT_EQ(st.size(), 1u);
  EXPECT_TRUE(st[0].standing_by);
  EXPECT_NE(st[0].lock_holder.find("pid " + std::to_string(::getpid())), std::string::npos) << st[0].lock_holder;
  EXPECT_EQ(files.writes, 1);
  first.reset();  // the holder goes; the other takes over
  second->run();
  EXPECT_FALSE(status_of(*second).standing_by);
}

// Finding 6: a symbolic link swapped in for a member, and a member truncated
// while read: fd0e0e3 followed the link and mapped the file (SIGBUS).
TEST_F(StewardRun, ASwappedInLinkOrATruncationIsHeldBackNotFollowed) {
  const auto a = add(1), b = add(2), c = add(3);
  const auto outside = tmp / "outside.mdb";
  files.before_read = [&](const std::string& path) {
    if (path == a && !fs::is_symlink(a)) {
      fs::rename(a, outside);
      fs::create_symlink(outside, a);
    }
    if (path == b) {
      EXPECT_EQ(::truncate(b.c_str(), 100), 0);
    }
  };
  auto s = steward();
  s->run();
  const auto st = status_of(*s);
  EXPECT_EQ(st.held_back.size(), 2u);
  EXPECT_TRUE(fs::exists(outside));
  EXPECT_EQ(files.writes, 0);  // c alone is no group
  (void)c;
}

// Finding 7: fd0e0e3 ran the whole first pass on the work loop, with no
// watchdog ping, so a large cache on a slow disk got dedupd killed. A pass
// now runs in the steward's worker; a second one is not started while it
// runs, the status shows its progress, and a stop ends it at the next file.
TEST_F(StewardRun, APassRunsInTheWorkerAndStopsAtTheNextFile) {
  add(1);
  add(2);
  add(3);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> reading;
  int reads = 0;
  files.before_read = [&](const std::string&) {
    if (++reads == 1) {
      reading.set_value();
      released.wait();
    }
  };
  auto s = steward();
  ASSERT_TRUE(s->start_pass());
  reading.get_future().wait();  // the worker is in its first read; this thread is free
  EXPECT_TRUE(s->pass_running());
  // The first pass has published nothing yet; its progress shows all the same.
  const auto during = s->status();
  ASSERT_EQ(during.size(), 1u) << "no status while the first pass runs";
  EXPECT_EQ(during[0].endpoint, root);
  EXPECT_TRUE(during[0].pass_running);
  EXPECT_FALSE(s->start_pass()) << "one pass at a time";
  s->request_stop();
  release.set_value();
  s->stop();
  EXPECT_FALSE(s->pass_running());
  EXPECT_EQ(reads, 1) << "the pass went on after the stop";
  EXPECT_EQ(files.writes, 0);
  // A later pass does the work.
  files.before_read = nullptr;
  ASSERT_TRUE(s->start_pass());
  s->wait_pass();
  EXPECT_EQ(files.writes, 1);
}

// `dedupctl xet-cache plan`: the next pass as a dry run, with the same
// rules; nothing is written, deleted or remembered.
TEST_F(StewardRun, APlanIsTheNextPassWithoutItsEffects) {
  const auto a = add(1), b = add(2), c = add(3);
  auto s = steward();
  auto plan = s->plan("");
  ASSERT_TRUE(plan);
  ASSERT_EQ(plan->size(), 1u);
  ASSERT_EQ((*plan)[0].steps.size(), 1u);
  const auto& merge = (*plan)[0].steps[0];
  EXPECT_EQ(merge.action, "merge");
  EXPECT_EQ(merge.files.size(), 3u);
  EXPECT_GT(merge.bytes_saved, 0u);
  EXPECT_TRUE((*plan)[0].liveness_established);
  EXPECT_EQ(files.writes, 0);
  EXPECT_EQ(shard_files().size(), 3u);
  EXPECT_TRUE(s->status().empty()) << "a dry run publishes nothing";
  // The pass does what the plan said; the next plan deletes the originals.
  s->run();
  EXPECT_EQ(files.writes, 1);
  ingest_new();
  plan = s->plan(root);
  ASSERT_TRUE(plan);
  ASSERT_EQ((*plan)[0].steps.size(), 3u);
  for (const auto& step : (*plan)[0].steps) EXPECT_EQ(step.action, "delete");
  EXPECT_TRUE(exists(a) && exists(b) && exists(c));
  EXPECT_EQ(status_of(*s).pending_deletions, 3u);
  EXPECT_TRUE(s->plan("/elsewhere")->empty());
  s->run();
  EXPECT_FALSE(exists(a) || exists(b) || exists(c));
}

// dedupd restarted in the middle of a merge, killed before its rename: the
// temporary it left is neither a shard nor counted, and the restarted
// steward removes it; no original goes for the merge that never became a
// file; the merge is done again and only then are the originals deleted.
TEST_F(StewardRun, AMergeKilledBeforeItsRenameIsRedoneAndItsTemporaryRemoved) {
  const auto [a, b, c] = kill_first_merge(FakeFiles::Kill::before_rename);
  const auto temps = dedupd::xetcache::list_steward_temps(shard_cache);
  ASSERT_TRUE(temps);
  ASSERT_EQ(temps->size(), 1u);
  const std::string temp = temps->front().path;
  EXPECT_EQ(shard_files(), (std::vector<std::string>{a, b, c})) << "the temporary is no shard";
  ingest_new();  // the watcher's scan at start
  EXPECT_FALSE(*idx->source(temp)) << "the temporary is not indexed";
  EXPECT_FALSE(fs::exists(state + "/xet-cache-pending") && fs::file_size(state + "/xet-cache-pending") != 0)
      << "nothing was journaled for a merge that wrote no file";

  files.kill = FakeFiles::Kill::never;
  auto restarted = steward();
  EXPECT_TRUE(restarted->run());
  EXPECT_FALSE(exists(temp)) << "the killed merge's temporary is left behind";
  EXPECT_EQ(files.writes, 1) << "the merge is done again";
  EXPECT_TRUE(exists(a) && exists(b) && exists(c));
  EXPECT_EQ(status_of(*restarted).files_before, 3u) << "the temporary is counted as a shard";
  EXPECT_EQ(status_of(*restarted).pending_deletions, 3u);
  ingest_new();
  clock.mono += 60;
  restarted->run();
  EXPECT_FALSE(exists(a) || exists(b) || exists(c));
  EXPECT_EQ(shard_files().size(), 1u);
  EXPECT_TRUE(dedupd::xetcache::list_steward_temps(shard_cache)->empty());
}

// Killed after the rename but before the originals were journaled: the
// merged file is there, nothing says what it replaced. The restarted
// steward deletes no original until a merge covering it is journaled again.
TEST_F(StewardRun, AMergeKilledBeforeItsJournalDeletesNothingUntilRedone) {
  const auto [a, b, c] = kill_first_merge(FakeFiles::Kill::after_rename);
  ASSERT_EQ(shard_files().size(), 4u);
  ingest_new();  // the merged file, taken by the watcher after the restart

  files.kill = FakeFiles::Kill::never;
  auto restarted = steward();
  restarted->run();
  EXPECT_TRUE(exists(a) && exists(b) && exists(c)) << "deleted on the strength of an unjournaled merge";
  EXPECT_GT(status_of(*restarted).pending_deletions, 0u);
  for (int i = 0; i < 3; ++i) {
    ingest_new();
    clock.mono += 60;
    restarted->run();
  }
  EXPECT_FALSE(exists(a) || exists(b) || exists(c));
  EXPECT_EQ(shard_files().size(), 1u);
  EXPECT_TRUE(dedupd::xetcache::list_steward_temps(shard_cache)->empty());
}

}  // namespace
}  // namespace dedupd::daemon::xetcache
