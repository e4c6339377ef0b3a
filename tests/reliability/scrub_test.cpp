// The background scrub's own find: a running dedupd whose data.mdb is
// damaged under it, at a page only the scrub reads (no query asks for what
// it holds, and LMDB's page structure is left whole, so nothing but the
// scrub's record checks can tell), finds it within its pace, says it was
// the scrub, moves the index aside, rebuilds, and answers every chunk of
// its shards exactly as before. `dedupctl status` (the real binary) then
// shows the rebuild's lines.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <lmdb.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "harness/daemon_test.hpp"
#include "harness/program_run.hpp"
#include "index/records.hpp"
#include "support.hpp"

namespace dedupd::reliability {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using nlohmann::json;

// The duplicates of one key of a chunk table, where they lie in data.mdb,
// found through LMDB in this process (read-only, beside the daemon).
struct ChunkGroup {
  std::uint64_t offset = 0;  // of the first duplicate in data.mdb
  std::size_t count = 0;     // 10-byte duplicates, back to back
  std::uint64_t page = 0;
  std::uint8_t key = 0;
  std::vector<std::uint8_t> values;  // as they were
};

// The key in the middle of `table` that has duplicates: LMDB's
// MDB_GET_MULTIPLE hands back a pointer to them in its map of the file,
// inside a page (a sub-page is inside its leaf), and a page starts with
// its own number (MDB_page.mp_pgno): so where they lie in data.mdb.
ChunkGroup find_group(const fs::path& index_dir, const char* table) {
  ChunkGroup g;
  MDB_env* env = nullptr;
  EXPECT_EQ(mdb_env_create(&env), 0);
  EXPECT_EQ(mdb_env_set_maxdbs(env, 32), 0);
  int rc = mdb_env_open(env, index_dir.c_str(), MDB_RDONLY | MDB_NOTLS, 0);
  EXPECT_EQ(rc, 0) << mdb_strerror(rc);
  MDB_txn* txn = nullptr;
  MDB_dbi dbi = 0;
  MDB_cursor* c = nullptr;
  if (rc == 0 && (rc = mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn)) == 0 &&
      (rc = mdb_dbi_open(txn, table, MDB_DUPSORT | MDB_DUPFIXED, &dbi)) == 0 &&
      (rc = mdb_cursor_open(txn, dbi, &c)) == 0) {
    std::vector<std::uint8_t> keys;
    MDB_val k{}, v{};
    for (int r = mdb_cursor_get(c, &k, &v, MDB_FIRST); r == 0; r = mdb_cursor_get(c, &k, &v, MDB_NEXT_NODUP))
      keys.push_back(*static_cast<const std::uint8_t*>(k.mv_data));
    EXPECT_GE(keys.size(), 16u) << table << " holds too few keys";
    if (!keys.empty()) {
      g.key = keys[keys.size() / 2];
      k = {1, &g.key};
      EXPECT_EQ(mdb_cursor_get(c, &k, &v, MDB_SET_KEY), 0);
      EXPECT_EQ(mdb_cursor_get(c, &k, &v, MDB_GET_MULTIPLE), 0);
      const auto* at = static_cast<const std::uint8_t*>(v.mv_data);
      const auto* page = reinterpret_cast<const std::uint8_t*>(std::uintptr_t(at) & ~std::uintptr_t(4095));
      std::memcpy(&g.page, page, 8);
      g.offset = g.page * 4096 + std::uint64_t(at - page);
      g.count = v.mv_size / index::records::kChunkValueBytes;
      g.values.assign(at, at + v.mv_size);
    }
  }
  EXPECT_EQ(rc, 0) << table << ": " << mdb_strerror(rc);
  if (c) mdb_cursor_close(c);
  if (txn) mdb_txn_abort(txn);
  mdb_env_close(env);
  return g;
}

class ScrubTest : public itest::DaemonTest {
 protected:
  fs::path index_dir() const { return dir / "state" / "index"; }

  // Every chunk of every shard, asked at once per shard: the answers as
  // the socket gave them.
  std::vector<json> answers() {
    std::vector<json> out;
    for (const auto& s : shards_) {
      json body = {{"hashes", json::array()}};
      for (const auto& h : s.chunks) body["hashes"].push_back(h.to_string());
      auto r = http().post("/v1/chunk", body.dump());
      EXPECT_EQ(r.status, 200) << r.body;
      if (r.status != 200) return out;
      json doc = r.json();
      EXPECT_EQ(doc["found"], s.chunks.size());
      for (auto& one : doc["results"]) out.push_back(std::move(one));
    }
    return out;
  }

  std::vector<KnownShard> shards_;
};

TEST_F(ScrubTest, DamageUnderARunningDaemonIsFoundByTheScrubAndRebuilt) {
  write_config("log_level: info\nindex:\n  scrub_interval: 1s\n");
  start();
  for (int i = 0; i < 4; ++i) {
    auto s = itest::make_shard({.seed = 7300 + std::uint64_t(i), .xorbs = 2, .chunks_per_xorb = 4096});
    shards_.push_back(known(s));
    itest::drop_file(incoming, s.file_name(), s.bytes);
  }
  ASSERT_TRUE(eventually([&] { return shard_count("live") == shards_.size(); }, 60s)) << daemon_log();
  // A whole clean pass over the four shards: one that began after them.
  const std::uint64_t passes = get_json("/v1/status")["index_health"]["scrub_passes"].get<std::uint64_t>();
  ASSERT_TRUE(eventually(
      [&] { return get_json("/v1/status")["index_health"]["scrub_passes"].get<std::uint64_t>() >= passes + 2; }, 60s))
      << daemon_log();
  json h = get_json("/v1/status")["index_health"];
  ASSERT_EQ(h["state"], "ok") << h.dump();
  ASSERT_EQ(h["scrub_last_result"], "clean") << h.dump();
  const std::vector<json> before = answers();
  ASSERT_EQ(before.size(), shards_.size() * 8192);

  // 32 Ki entries stay in the recent table (merged past 256 Ki): the page
  // of one of its keys. Each duplicate's three hash bytes are inverted, its
  // xorb id and chunk index kept, so the scrub can name the first exactly.
  const ChunkGroup g = find_group(index_dir(), "chunks_recent");
  ASSERT_GE(g.count, 2u);
  std::vector<std::uint8_t> damaged = g.values;
  for (std::size_t i = 0; i < g.count; ++i)
    for (std::size_t b = 0; b < index::records::kChunkHashBytesInValue; ++b) damaged[i * 10 + b] ^= 0xFF;
  const std::uint8_t* first = g.values.data();
  const std::string first_entry = "chunk entry of xorb id " + std::to_string(index::records::chunk_value_xorb(first)) +
                                  " #" + std::to_string(index::records::chunk_value_index(first));
  {
    int fd = ::open((index_dir() / "data.mdb").c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, damaged.data(), damaged.size(), off_t(g.offset)), ssize_t(damaged.size()));
    ::close(fd);
  }
  std::printf("  damaged page %llu: %zu entries of key 0x%02x in chunks_recent, from byte %llu\n",
              (unsigned long long)g.page, g.count, unsigned(g.key), (unsigned long long)g.offset);

  // The scrub's next pass finds it; dedupd starts again in its process and
  // rebuilds (the socket refuses meanwhile).
  ASSERT_TRUE(until_rebuilt(daemon, http(), h, 120s)) << h.dump() << "\n" << daemon_log();
  ASSERT_TRUE(daemon.running()) << daemon_log();
  // It was the scrub: its words, naming the first entry damaged, in status
  // and in the log line it wrote before the restart.
  const std::string found = "the scrub found " + first_entry + " does not match the stored hash";
  const std::string damage = h["damage"].get<std::string>();
  EXPECT_EQ(damage.substr(0, found.size()), found) << damage;
  EXPECT_TRUE(damage.size() == found.size() || damage.substr(found.size()).starts_with(" (and ")) << damage;
  EXPECT_NE(daemon_log().find("the index is damaged: " + found), std::string::npos) << daemon_log();
  const fs::path kept = h["moved_to"].get<std::string>();
  EXPECT_TRUE(fs::exists(kept / "data.mdb")) << kept;
  EXPECT_EQ(h["rebuild"]["files_total"], shards_.size()) << h.dump();

  // Every chunk answers as before: the same xorb, range and shards.
  const std::vector<json> after = answers();
  ASSERT_EQ(after.size(), before.size());
  std::size_t differ = 0;
  for (std::size_t i = 0; i < before.size(); ++i)
    if (after[i] != before[i] && differ++ < 3) ADD_FAILURE() << before[i].dump() << "\n  now " << after[i].dump();
  EXPECT_EQ(differ, 0u);

  // The real client says so: the rebuild's lines, as status has them.
  itest::ProgramRun text = itest::run_program(DEDUPCTL_BINARY, {"--socket", socket.string(), "status"});
  EXPECT_EQ(text.code, 0) << text.out;
  const std::string files = std::to_string(shards_.size());
  EXPECT_EQ(status_field(text.out, "Index health"), "rebuilt after damage (" + files + " of " + files + " files)")
      << text.out;
  EXPECT_EQ(status_field(text.out, "Damage"), damage) << text.out;
  EXPECT_EQ(status_field(text.out, "Kept at"), kept.string()) << text.out;
  itest::ProgramRun as_json = itest::run_program(DEDUPCTL_BINARY, {"--socket", socket.string(), "--json", "status"});
  ASSERT_EQ(as_json.code, 0) << as_json.out;
  const json printed = json::parse(as_json.out)["index_health"];
  for (const char* field : {"state", "damage", "moved_to", "found_at", "rebuild"})
    EXPECT_EQ(printed[field], h[field]) << field;

  // The copy kept aside still holds the damage: `dedupd --check` names the
  // page (its duplicates are out of order now).
  itest::ProgramRun check = itest::run_program(itest::dedupd_binary(), {"--check", kept.string()});
  EXPECT_EQ(check.code, 1) << check.out;
  EXPECT_NE(check.out.find("data.mdb: a sub-page in page " + std::to_string(g.page) +
                           " (the duplicates of a key of "
                           "table \"chunks_recent\")"),
            std::string::npos)
      << check.out;

  EXPECT_EQ(daemon.stop(), 0);
  IndexReport rep = inspect_index(index_dir(), shards_);
  for (const auto& p : rep.problems) ADD_FAILURE() << p;
  EXPECT_EQ(rep.live, shards_.size());
  std::printf("  found by the scrub (%s), rebuilt; %zu answers as before\n", damage.c_str(), after.size());
}

}  // namespace
}  // namespace dedupd::reliability
