// What the compat tests share (issue 61): the previous release's programs
// (tests/compat/build_release.sh put them in the build directory), a config
// that release reads, dedupd hosts started from either release, and
// streamed lookups through either release's dedupctl, checked against the
// shards the test made.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "harness/fleet_host.hpp"
#include "harness/make_shard.hpp"

namespace dedupd::compat {

namespace fs = std::filesystem;

// One release's pair of programs.
struct Release {
  std::string name;  // "v0.1.0 <commit>", or "this build"
  std::string dedupd, dedupctl;
};

// The previous release, as build_release.sh left it; a missing program fails
// the calling test (ASSERT_NO_FATAL_FAILURE(old_release())) with what to run.
const Release& old_release();
// The programs of this build (the harness's dedupd, this build's dedupctl).
const Release& new_release();

// The fleet schema version v0.1.0 made and needs (fleet/migrations.cpp there).
inline constexpr int kOldFleetSchema = 6;
// The index schema version v0.1.0 reads and writes (index/schema.hpp there).
inline constexpr std::uint32_t kOldIndexSchema = 7;

// Writes h.config with the keys v0.1.0 knows (daemon/config/load.cpp
// there), whatever FleetHost::write_config writes today: state_dir, socket,
// the incoming watch, log_level, and a fleet section when `url` is not "".
void write_old_config(const itest::FleetHost& h, const std::string& url, const std::string& lookup_timeout);
// `dedupd --config C --check-config` of that release: "" when it said ok,
// else what it printed.
std::string check_config(const Release& r, const fs::path& config);

// Starts h's dedupd from release r on h.config, and waits for /healthz
// (fails the test with its log when it does not answer).
void start_host(itest::FleetHost& h, const Release& r);

// h's dedupd (its log since the last start) opened the index in its state
// dir in place: it found nothing damaged, moved nothing aside, rebuilt
// nothing.
void expect_index_opened_in_place(const itest::FleetHost& h, const std::string& who);

// A chunk a lookup must find: its raw hash, where it lives, who answers.
struct Expected {
  std::string hash, xorb;
  std::uint64_t chunk_index = 0;
  std::string origin;  // "local" or "fleet"
  std::string holder;  // with "fleet": the host the fleet must name
};
// Every chunk of `s`, each expected from `origin` (holder: the host it was
// dropped on).
void add_expected(std::vector<Expected>& out, const itest::MadeShard& s, const std::string& origin,
                  const std::string& holder);

struct StreamAnswer {
  int code = -1;            // dedupctl's exit status
  std::size_t lines = 0;    // results read
  std::size_t right = 0;    // found, at the expected xorb, index and origin
  std::string first_wrong;  // the first result that was not, with why
  std::string err;          // dedupctl's stderr
  bool all_right(std::size_t n) const { return code == 0 && lines == n && right == n; }
  std::string describe() const;
};
// `dedupctl --socket S query --json-lines -` of release r with the hashes of
// `want` on its standard input (a file in `scratch`), every line checked.
StreamAnswer stream_query(const Release& r, const fs::path& socket, const std::vector<Expected>& want,
                          const fs::path& scratch);

// A file's bytes and times, to tell whether anything touched it.
struct FileState {
  std::uintmax_t size = 0;
  std::int64_t mtime_ns = 0, ctime_ns = 0;
  std::string digest;  // of the whole contents
  bool operator==(const FileState&) const = default;
};
FileState file_state(const fs::path& p);
std::string describe(const FileState& s);

}  // namespace dedupd::compat
