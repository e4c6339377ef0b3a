// A damaged index: truncated, scribbled, its meta pages zeroed, emptied.
// `dedupd --check` names the damage and never dies of a signal; dedupd
// never serves a damaged index silently: it moves it aside (kept for an
// admin) and rebuilds from the watched shards to the exact entry count,
// found at start (meta pages, size) or by the scrub while it runs.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>

#include "harness/daemon_test.hpp"
#include "harness/program_run.hpp"
#include "support.hpp"

namespace dedupd::reliability {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

class DamageTest : public itest::DaemonTest {
 protected:
  fs::path index_dir() const { return dir / "state" / "index"; }
  fs::path good_copy() const { return dir / "good-index"; }

  // Four shards indexed, dedupd stopped, the index kept aside as it was.
  void build_index() {
    write_config("log_level: info\n");
    start();
    for (int i = 0; i < 4; ++i) {
      auto s = itest::make_shard({.seed = 7100 + std::uint64_t(i), .xorbs = 2, .chunks_per_xorb = 4096});
      shards_.push_back(known(s));
      itest::drop_file(incoming, s.file_name(), s.bytes);
    }
    ASSERT_TRUE(eventually([&] { return shard_count("live") == shards_.size(); }, 60s)) << daemon_log();
    ASSERT_EQ(daemon.stop(), 0);
    IndexReport rep = inspect_index(index_dir(), shards_);
    ASSERT_TRUE(rep.problems.empty());
    entries_ = rep.chunk_entries;
    fs::copy(index_dir(), good_copy(), fs::copy_options::recursive);
  }

  // The good index back in place, then `damage` done to its data.mdb.
  void damaged(const std::function<void(const fs::path&)>& damage) {
    fs::remove_all(index_dir());
    for (const auto& e : fs::directory_iterator(dir / "state"))
      if (e.path().filename().string().starts_with("index.damaged-")) fs::remove_all(e.path());
    fs::copy(good_copy(), index_dir(), fs::copy_options::recursive);
    damage(index_dir() / "data.mdb");
  }

  itest::ProgramRun check() { return itest::run_program(itest::dedupd_binary(), {"--check", index_dir().string()}); }

  // --check ends by itself with a documented code, naming what it found.
  void expect_check_names_damage(const std::string& what) {
    itest::ProgramRun r = check();
    EXPECT_NE(r.code, -1) << what << ": --check died of a signal";
    EXPECT_EQ(r.code, 1) << what << ": " << r.out;
    EXPECT_NE(r.out.find("damaged"), std::string::npos) << what << ": " << r.out;
  }

  // dedupd rebuilds: the damaged index kept, every shard answers, the
  // entry count exact, and the invariants hold.
  void expect_rebuilt(const std::string& what) {
    start();
    nlohmann::json h;
    ASSERT_TRUE(until_rebuilt(daemon, http(), h, 60s)) << what << ": " << h.dump() << "\n" << daemon_log();
    ASSERT_TRUE(daemon.running()) << what << ": dedupd stopped\n" << daemon_log();
    EXPECT_FALSE(h["damage"].get<std::string>().empty()) << what;
    const fs::path kept = h["moved_to"].get<std::string>();
    EXPECT_TRUE(fs::exists(kept / "data.mdb")) << what << ": the damaged index is not kept at " << kept;
    for (const auto& s : shards_)
      for (std::size_t i = 0; i < s.chunks.size(); i += 97)
        EXPECT_TRUE(chunk_found(s.chunks[i].to_string())) << what << ": shard " << s.hash.to_string();
    EXPECT_EQ(daemon.stop(), 0);
    IndexReport rep = inspect_index(index_dir(), shards_);
    for (const auto& p : rep.problems) ADD_FAILURE() << what << ": " << p;
    EXPECT_EQ(rep.live, shards_.size()) << what;
    EXPECT_EQ(rep.chunk_entries, entries_) << what;
    std::printf("  %s: found (%s), rebuilt to %llu entries\n", what.c_str(), h["damage"].get<std::string>().c_str(),
                (unsigned long long)rep.chunk_entries);
  }

  // Nothing was damaged: the scrub's first pass is clean, and every shard
  // answers from the index as it was.
  void expect_served_as_before(const std::string& what) {
    start();
    nlohmann::json h;
    ASSERT_TRUE(eventually(
        [&] {
          auto r = http().get("/v1/status");
          if (r.status != 200) return false;
          h = r.json()["index_health"];
          return h["state"] != "ok" || h["scrub_passes"].get<std::uint64_t>() >= 1;
        },
        60s))
        << what << ": " << h.dump();
    EXPECT_EQ(h["state"], "ok") << what;
    EXPECT_EQ(h["scrub_last_result"], "clean") << what;
    for (const auto& s : shards_) EXPECT_TRUE(chunk_found(s.chunks.front().to_string())) << what;
    EXPECT_EQ(daemon.stop(), 0);
    IndexReport rep = inspect_index(index_dir(), shards_);
    EXPECT_TRUE(rep.problems.empty()) << what;
    EXPECT_EQ(rep.chunk_entries, entries_) << what;
    std::printf("  %s: freed pages only; the scrub's pass was clean\n", what.c_str());
  }

  static void write_at(const fs::path& file, std::uint64_t offset, const std::vector<std::uint8_t>& bytes) {
    int fd = ::open(file.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, bytes.data(), bytes.size(), off_t(offset)), ssize_t(bytes.size()));
    ::close(fd);
  }
  // The bytes LMDB has used: its pages up to the last one (the file, as
  // large as the map, holds unused room after them).
  std::uint64_t used_bytes() {
    itest::ProgramRun r = itest::run_program("mdb_stat", {"-e", index_dir().string()});
    auto at = r.out.find("Number of pages used: ");
    if (at == std::string::npos) return fs::file_size(index_dir() / "data.mdb");
    return std::stoull(r.out.substr(at + 22)) * 4096;
  }

  std::vector<KnownShard> shards_;
  std::uint64_t entries_ = 0;
};

TEST_F(DamageTest, ATruncatedFileIsNamedAndRebuilt) {
  build_index();
  const std::uint64_t used = used_bytes();
  for (double share : {0.4, 0.1, 0.01}) {
    const std::string what = "truncated to " + std::to_string(int(share * 100)) + " % of its pages";
    damaged([&](const fs::path& f) { fs::resize_file(f, std::uint64_t(double(used) * share) / 4096 * 4096 + 100); });
    expect_check_names_damage(what);
    expect_rebuilt(what);
  }
}

TEST_F(DamageTest, AZeroLengthFileIsNamedAndRebuilt) {
  build_index();
  damaged([](const fs::path& f) { fs::resize_file(f, 0); });
  expect_check_names_damage("zero-length");
  expect_rebuilt("zero-length");
}

TEST_F(DamageTest, ZeroedMetaPagesAreNamedAndRebuilt) {
  build_index();
  const std::vector<std::uint8_t> page(4096, 0);
  for (int which : {0, 1, 2}) {
    const std::string what = which == 2 ? "both meta pages zeroed" : "meta page " + std::to_string(which) + " zeroed";
    damaged([&](const fs::path& f) {
      if (which != 1) write_at(f, 0, page);
      if (which != 0) write_at(f, 4096, page);
    });
    expect_check_names_damage(what);
    expect_rebuilt(what);
  }
}

TEST_F(DamageTest, ADirectoryInPlaceOfTheFileCannotBeRead) {
  build_index();
  fs::remove(index_dir() / "data.mdb");
  fs::create_directory(index_dir() / "data.mdb");
  itest::ProgramRun r = check();
  EXPECT_EQ(r.code, 3) << "could not read: " << r.out;
}

// Random bytes over pages in use: what the start cannot see, the scrub
// finds within its first pass. Either way nothing damaged is served: once
// dedupd has settled, every shard answers and the invariants hold.
TEST_F(DamageTest, ScribbledPagesAreFoundAndRebuilt) {
  build_index();
  const std::uint64_t used = used_bytes();
  std::mt19937_64 rng(42);
  struct Scribble {
    double at;
    std::size_t bytes;
  };
  int found = 0;
  for (Scribble s : {Scribble{0.5, 256 << 10}, Scribble{0.1, 64 << 10}, Scribble{0.3, 64 << 10},
                     Scribble{0.7, 64 << 10}, Scribble{0.9, 64 << 10}}) {
    const std::string what =
        std::to_string(s.bytes >> 10) + " KiB scribbled at " + std::to_string(int(s.at * 100)) + " %";
    std::vector<std::uint8_t> junk(s.bytes);
    for (auto& b : junk) b = std::uint8_t(rng());
    const std::uint64_t offset = std::max<std::uint64_t>(2 * 4096, std::uint64_t(double(used) * s.at) / 4096 * 4096);
    damaged([&](const fs::path& f) { write_at(f, offset, junk); });
    itest::ProgramRun r = check();
    ASSERT_NE(r.code, -1) << what << ": --check died of a signal";
    if (r.code == 0) {
      // Pages LMDB had freed: nothing is damaged, and nothing may change.
      expect_served_as_before(what);
      continue;
    }
    EXPECT_EQ(r.code, 1) << what << ": " << r.out;
    ++found;
    expect_rebuilt(what);
  }
  // Many pages of a young index are free (the recent table's merges free
  // what they rewrite), and a scribble there damages nothing.
  EXPECT_GE(found, 1) << "no scribble landed on a page in use: this test showed nothing";
}

// An operator asks: the same rebuild, while dedupd runs, with progress.
TEST_F(DamageTest, AnOperatorAsksForARebuild) {
  build_index();
  damaged([](const fs::path&) {});
  start();
  itest::ProgramRun r = itest::run_program(DEDUPCTL_BINARY, {"--socket", socket.string(), "index", "rebuild"});
  EXPECT_EQ(r.code, 0) << r.out << daemon_log();
  EXPECT_NE(r.out.find("rebuilt"), std::string::npos) << r.out;
  ASSERT_TRUE(daemon.running());
  nlohmann::json h = get_json("/v1/status")["index_health"];
  EXPECT_EQ(h["state"], "rebuilt") << h.dump();
  EXPECT_NE(h["damage"].get<std::string>().find("operator"), std::string::npos) << h.dump();
  for (const auto& s : shards_) EXPECT_TRUE(chunk_found(s.chunks.front().to_string()));
  EXPECT_EQ(daemon.stop(), 0);
  IndexReport rep = inspect_index(index_dir(), shards_);
  EXPECT_TRUE(rep.problems.empty());
  EXPECT_EQ(rep.chunk_entries, entries_);
}

}  // namespace
}  // namespace dedupd::reliability
