// The local index across the upgrade (issue 61), with the previous release's
// real dedupd (tests/compat/build_release.sh) beside this build's: an index
// v0.1.0 wrote is opened in place by this dedupd with every chunk answered,
// and one it can open again after (a rollback); an index of a schema v0.1.0
// does not know is refused by it, by its start and by its --check, and left
// as it was.
#include <gtest/gtest.h>
#include <lmdb.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "compat_support.hpp"
#include "harness/daemon_process.hpp"
#include "harness/eventually.hpp"
#include "harness/fleet_host.hpp"
#include "harness/make_shard.hpp"
#include "harness/program_run.hpp"
#include "index/tables.hpp"
#include "tests/support/text_file.hpp"

namespace dedupd::compat {
namespace {

using itest::drop_file;
using itest::eventually;
using itest::FleetHost;
using itest::MadeShard;
using itest::make_shard;
using nlohmann::json;

// Shards of the shapes an index holds: client uploads (files, lookup
// tables), one large enough that its entries go through the recent table's
// merge, a keyed one (answered by hashing the raw query under its key) and
// a plain one of two xorbs.
std::vector<MadeShard> varied_shards(std::uint64_t seed) {
  std::vector<MadeShard> out;
  for (std::uint64_t i = 0; i < 3; ++i)
    out.push_back(make_shard({.seed = seed + i, .xorbs = 1, .chunks_per_xorb = 3, .client_style = true}));
  out.push_back(make_shard({.seed = seed + 3, .xorbs = 16, .chunks_per_xorb = 256}));
  shard::Key key{};
  for (std::size_t i = 0; i < key.bytes.size(); ++i) key.bytes[i] = std::uint8_t(seed + 7 * i);
  out.push_back(make_shard({.seed = seed + 4, .xorbs = 2, .chunks_per_xorb = 5, .expiry = 4'000'000'000, .key = key}));
  out.push_back(make_shard({.seed = seed + 5, .xorbs = 2, .chunks_per_xorb = 4}));
  return out;
}

std::vector<Expected> expected_local(const std::vector<MadeShard>& shards) {
  std::vector<Expected> out;
  for (const MadeShard& s : shards) add_expected(out, s, "local", "");
  return out;
}

json live_shards(FleetHost& h) { return h.http().get("/v1/stats").json()["shards"]["live"]; }

// The files of a directory, by name, with their state.
std::map<std::string, FileState> dir_state(const fs::path& dir) {
  std::map<std::string, FileState> out;
  for (const auto& e : fs::directory_iterator(dir)) out[e.path().filename().string()] = file_state(e.path());
  return out;
}

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Writes the schema_version record of the index in `dir` (4 bytes, the meta
// table; index/open_tables.cpp) with liblmdb alone; "" or what failed.
std::string set_schema_version(const fs::path& dir, std::uint32_t version) {
  MDB_env* env = nullptr;
  MDB_txn* txn = nullptr;
  MDB_dbi meta;
  auto fail = [&](const char* what, int rc) {
    if (txn) mdb_txn_abort(txn);
    if (env) mdb_env_close(env);
    return std::string(what) + ": " + mdb_strerror(rc);
  };
  int rc = mdb_env_create(&env);
  if (rc) return fail("mdb_env_create", rc);
  if ((rc = mdb_env_set_maxdbs(env, 32))) return fail("mdb_env_set_maxdbs", rc);
  if ((rc = mdb_env_open(env, dir.c_str(), 0, 0640))) return fail("mdb_env_open", rc);
  if ((rc = mdb_txn_begin(env, nullptr, 0, &txn))) return fail("mdb_txn_begin", rc);
  if ((rc = mdb_dbi_open(txn, "meta", 0, &meta))) return fail("opening meta", rc);
  MDB_val k{std::strlen(index::schema::kSchemaVersion), const_cast<char*>(index::schema::kSchemaVersion)};
  MDB_val v{sizeof version, &version};
  if ((rc = mdb_put(txn, meta, &k, &v, 0))) return fail("mdb_put", rc);
  rc = mdb_txn_commit(txn);
  txn = nullptr;
  if (rc) return fail("mdb_txn_commit", rc);
  mdb_env_close(env);
  return "";
}

// `dedupd --check DIR` of release r: its exit status and everything it printed.
itest::ProgramRun check_index(const Release& r, const fs::path& dir) {
  return itest::run_shell("'" + r.dedupd + "' --check '" + dir.string() + "' 2>&1");
}

class IndexCompat : public itest::FleetHostsTest {
 protected:
  IndexCompat() : FleetHostsTest("compat-index") {}

  // A host without a fleet on a config v0.1.0 reads (this build reads it too).
  FleetHost& add_host(const std::string& name) {
    FleetHost& h = keep(std::make_unique<FleetHost>(root, name));
    write_old_config(h, "", "");
    EXPECT_EQ(check_config(old_release(), h.config), "") << "v0.1.0 refuses the config it is given";
    EXPECT_EQ(check_config(new_release(), h.config), "") << "this dedupd refuses v0.1.0's config";
    return h;
  }

  // Starts h from r, drops `shards` and waits until r's dedupctl finds every
  // chunk; then stops it (exit 0).
  void fill(FleetHost& h, const Release& r, const std::vector<MadeShard>& shards) {
    ASSERT_NO_FATAL_FAILURE(start_host(h, r));
    for (const MadeShard& s : shards) drop_file(h.incoming, s.file_name(), s.bytes);
    const std::vector<Expected> want = expected_local(shards);
    StreamAnswer last;
    ASSERT_TRUE(eventually([&] { return (last = stream_query(r, h.socket, want, h.dir)).all_right(want.size()); },
                           std::chrono::seconds(120)))
        << r.name << " never answered every chunk it was given: " << last.describe();
    EXPECT_EQ(live_shards(h), json(shards.size()));
    EXPECT_EQ(h.process.stop(), 0) << r.name << " did not stop cleanly";
  }
};

TEST_F(IndexCompat, AnIndexTheOldReleaseWroteIsOpenedInPlaceWithEveryChunkAndOpenedByItAgainAfter) {
  const Release& old = old_release();
  const Release& now = new_release();
  FleetHost& h = add_host("upgraded");
  const std::vector<MadeShard> shards = varied_shards(6100);
  const std::vector<Expected> want = expected_local(shards);
  ASSERT_NO_FATAL_FAILURE(fill(h, old, shards));
  const fs::path index_dir = h.dir / "state" / "index";
  ASSERT_TRUE(fs::exists(index_dir / "data.mdb"));
  const std::vector<std::string> state_before = names_in(h.dir / "state");
  itest::ProgramRun checked = check_index(old, index_dir);
  EXPECT_EQ(checked.code, 0) << checked.out;

  // This dedupd on the same state dir: the same index, not a rebuilt one.
  ASSERT_NO_FATAL_FAILURE(start_host(h, now));
  for (const Release* ctl : {&now, &old}) {
    StreamAnswer a = stream_query(*ctl, h.socket, want, h.dir);
    EXPECT_TRUE(a.all_right(want.size())) << ctl->name << "'s dedupctl, just after the start: " << a.describe();
  }
  EXPECT_EQ(live_shards(h), json(shards.size()));
  expect_index_opened_in_place(h, "this dedupd");
  // A shard more, through this release, on the index v0.1.0 wrote.
  MadeShard later = make_shard({.seed = 6190, .xorbs = 1, .chunks_per_xorb = 3, .client_style = true});
  drop_file(h.incoming, later.file_name(), later.bytes);
  std::vector<Expected> all = want;
  add_expected(all, later, "local", "");
  StreamAnswer last;
  EXPECT_TRUE(eventually([&] { return (last = stream_query(now, h.socket, all, h.dir)).all_right(all.size()); }))
      << last.describe();
  EXPECT_EQ(h.process.stop(), 0);
  checked = check_index(now, index_dir);
  EXPECT_EQ(checked.code, 0) << checked.out;

  // A rollback: v0.1.0 opens what this release wrote (schema 7 both).
  checked = check_index(old, index_dir);
  EXPECT_EQ(checked.code, 0) << checked.out;
  ASSERT_NO_FATAL_FAILURE(start_host(h, old));
  for (const Release* ctl : {&old, &now}) {
    StreamAnswer a = stream_query(*ctl, h.socket, all, h.dir);
    EXPECT_TRUE(a.all_right(all.size())) << "v0.1.0 after this release, " << ctl->name
                                         << "'s dedupctl: " << a.describe();
  }
  EXPECT_EQ(live_shards(h), json(shards.size() + 1));
  std::vector<std::string> state_after = names_in(h.dir / "state");
  std::printf("state dir before this release: %s\nafter it and v0.1.0 again: %s\n",
              ::testing::PrintToString(state_before).c_str(), ::testing::PrintToString(state_after).c_str());
  EXPECT_EQ(h.process.stop(), 0);
}

TEST_F(IndexCompat, AnIndexOfANewerSchemaIsRefusedByTheOldReleaseAndLeftAsItWas) {
  const Release& old = old_release();
  const Release& now = new_release();
  ASSERT_EQ(index::schema::kVersion, kOldIndexSchema)
      << "this release changed the index schema: v0.1.0 must refuse its indexes (see the next lines)";
  FleetHost& h = add_host("newer");
  const std::vector<MadeShard> shards = varied_shards(6200);
  ASSERT_NO_FATAL_FAILURE(fill(h, now, shards));
  const fs::path index_dir = h.dir / "state" / "index";
  const std::uint32_t newer = index::schema::kVersion + 1;
  ASSERT_EQ(set_schema_version(index_dir, newer), "");
  const std::string versions = "schema version " + std::to_string(newer);
  const std::string reads = "reads version " + std::to_string(kOldIndexSchema);

  const auto index_before = dir_state(index_dir);
  const std::vector<std::string> state_before = names_in(h.dir / "state");
  ASSERT_TRUE(index_before.count("data.mdb"));
  // An mtime set by what follows differs from one set before it.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));

  // v0.1.0's start: refused, a non-zero exit, the versions named.
  itest::LaunchOptions o;
  o.program = old.dedupd;
  o.args = {"--config", h.config.string()};
  o.log_file = h.dir / "old-start.log";
  o.work_dir = h.dir;
  itest::DaemonProcess refused;
  refused.start(o);
  std::optional<int> code = refused.wait_exit(std::chrono::seconds(60));
  const std::string said = tests::file_text(o.log_file);
  ASSERT_TRUE(code.has_value()) << "v0.1.0 runs on an index of schema " << newer << ":\n" << said;
  EXPECT_NE(*code, 0) << said;
  EXPECT_NE(said.find(versions), std::string::npos) << said;
  EXPECT_NE(said.find(reads), std::string::npos) << said;
  EXPECT_NE(said.find("newer dedupd"), std::string::npos) << said;
  std::printf("v0.1.0's start on a schema-%u index: exit %d, said:\n%s", newer, *code, said.c_str());

  // The index's files as they were in `before`: the same names, data.mdb
  // the same bytes. Its mtime too when `times`; lock.mdb is LMDB's reader
  // table, which every process that opens the index writes (no index data).
  auto unchanged = [&](const std::map<std::string, FileState>& before, const std::string& after, bool times) {
    const auto now_state = dir_state(index_dir);
    std::vector<std::string> names;
    for (const auto& [name, st] : before) names.push_back(name);
    EXPECT_EQ(names_in(index_dir), names) << after;
    for (const auto& [name, was] : before) {
      auto it = now_state.find(name);
      if (it == now_state.end() || it->second == was) continue;
      const FileState& st = it->second;
      std::printf("%s: %s was %s, is %s\n", after.c_str(), name.c_str(), describe(was).c_str(), describe(st).c_str());
      if (name == "lock.mdb") continue;
      EXPECT_EQ(st.size, was.size) << after << ": " << name;
      EXPECT_EQ(st.digest, was.digest) << after << ": " << name << " was written";
      if (times) {
        EXPECT_EQ(st.mtime_ns, was.mtime_ns) << after << ": " << name << "'s mtime moved";
      }
    }
    EXPECT_EQ(names_in(h.dir / "state"), state_before) << after;
  };
  // v0.1.0 (as this release) opens data.mdb read-write before it reads the
  // version, in the write transaction that would upgrade an older one: LMDB
  // (MDB_WRITEMAP) sets the file's size to the map's, the same size, and
  // dedupd reserves the map's blocks (posix_fallocate) before that
  // transaction. Neither writes a byte; both move data.mdb's mtime and
  // ctime, which is what the start is allowed to change.
  unchanged(index_before, "after v0.1.0's start", false);

  // --check of either release: refused with both versions, and read-only:
  // data.mdb's bytes and times as they were.
  for (const Release* r : {&old, &now}) {
    const auto before = dir_state(index_dir);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    itest::ProgramRun checked = check_index(*r, index_dir);
    std::printf("%s's --check on a schema-%u index: exit %d, said:\n%s", r->name.c_str(), newer, checked.code,
                checked.out.c_str());
    EXPECT_NE(checked.code, 0) << r->name << ": " << checked.out;
    EXPECT_NE(checked.out.find(versions), std::string::npos) << r->name << ": " << checked.out;
    EXPECT_NE(checked.out.find("reads version " + std::to_string(index::schema::kVersion)), std::string::npos)
        << r->name << ": " << checked.out;
    unchanged(before, "after " + r->name + "'s --check", true);
  }

  // Nothing was lost: with its version back, v0.1.0 answers every chunk.
  ASSERT_EQ(set_schema_version(index_dir, kOldIndexSchema), "");
  ASSERT_NO_FATAL_FAILURE(start_host(h, old));
  const std::vector<Expected> want = expected_local(shards);
  StreamAnswer a = stream_query(old, h.socket, want, h.dir);
  EXPECT_TRUE(a.all_right(want.size())) << a.describe();
  EXPECT_EQ(live_shards(h), json(shards.size()));
}

}  // namespace
}  // namespace dedupd::compat
