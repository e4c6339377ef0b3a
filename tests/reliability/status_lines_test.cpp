// `dedupctl status` (the real binary) on a real dedupd that cannot write
// its index: files waiting and the full disk, as the client prints them,
// and gone once the index can grow again. The daemon's file-size limit
// (RLIMIT_FSIZE, which any user may set on their own process) stands for
// the full disk: the index write fails the same way, before anything is
// written.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <regex>
#include <string>

#include "harness/daemon_test.hpp"
#include "harness/program_run.hpp"
#include "support.hpp"

namespace dedupd::reliability {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

class StatusLinesTest : public itest::DaemonTest {
 protected:
  void TearDown() override {
    daemon.kill_hard();
    DaemonTest::TearDown();
  }
  // The soft limit alone: raised again without privileges.
  void limit_file_size(rlim_t bytes) {
    rlimit lim{};
    ASSERT_EQ(::prlimit(daemon.pid(), RLIMIT_FSIZE, nullptr, &lim), 0);
    lim.rlim_cur = bytes == RLIM_INFINITY ? lim.rlim_max : bytes;
    ASSERT_EQ(::prlimit(daemon.pid(), RLIMIT_FSIZE, &lim, nullptr), 0);
  }
  itest::ProgramRun dedupctl(std::vector<std::string> args) {
    args.insert(args.begin(), {"--socket", socket.string()});
    return itest::run_program(DEDUPCTL_BINARY, args);
  }
};

TEST_F(StatusLinesTest, WaitingFilesAndTheFullDiskAsTheClientPrintsThem) {
  // No safety scan within the test: what takes the files in is the
  // waiting list's retries.
  write_config("log_level: warn\nexpiry:\n  check_interval: 1h\n");
  start();
  std::vector<itest::MadeShard> made;
  for (int i = 0; i < 9; ++i)
    made.push_back(itest::make_shard({.seed = 7400 + std::uint64_t(i), .xorbs = 2, .chunks_per_xorb = 4096}));
  itest::drop_file(incoming, made[0].file_name(), made[0].bytes);
  ASSERT_TRUE(eventually([&] { return shard_count("live") == 1; }, 60s)) << daemon_log();
  limit_file_size(fs::file_size(dir / "state" / "index" / "data.mdb"));
  // More than the room the map has left: some must wait.
  for (int i = 1; i < 9; ++i) itest::drop_file(incoming, made[i].file_name(), made[i].bytes);
  nlohmann::json st;
  ASSERT_TRUE(eventually(
      [&] {
        st = get_json("/v1/status");
        return st["waiting"]["count"].get<std::size_t>() + shard_count("live") == made.size() &&
               st["state_dir_space"]["disk_full"].get<bool>();
      },
      90s))
      << st.dump() << "\n"
      << daemon_log();
  const std::size_t waiting = st["waiting"]["count"].get<std::size_t>();
  ASSERT_GE(waiting, 1u);

  itest::ProgramRun text = dedupctl({"status"});
  EXPECT_EQ(text.code, 0) << text.out;
  EXPECT_EQ(status_field(text.out, "Waiting"),
            std::to_string(waiting) + " file" + (waiting == 1 ? "" : "s") + " not indexed yet, retried by themselves")
      << text.out;
  // Its age and attempts go on changing: their shape, with the path and
  // the rule as status has them.
  const std::string oldest = status_field(text.out, "Oldest").value_or("");
  const nlohmann::json& first = st["waiting"]["files"][0];
  EXPECT_TRUE(oldest.starts_with(first["path"].get<std::string>() + ": " + first["rule"].get<std::string>() + " for "))
      << oldest << "\n"
      << st.dump();
  EXPECT_TRUE(std::regex_match(oldest, std::regex(".*: index\\.[a-z_]+ for [0-9dhms ]+, [0-9]+ attempt\\(s\\)")))
      << oldest;
  const std::string free = status_field(text.out, "Free space").value_or("");
  EXPECT_TRUE(std::regex_match(free, std::regex("[0-9.]+ (B|[KMGTPE]iB) of [0-9.]+ (B|[KMGTPE]iB): DISK FULL, "
                                                "index writes fail")))
      << free;
  itest::ProgramRun as_json = dedupctl({"--json", "status"});
  ASSERT_EQ(as_json.code, 0) << as_json.out;
  const nlohmann::json printed = nlohmann::json::parse(as_json.out);
  EXPECT_EQ(printed["waiting"]["count"], waiting);
  EXPECT_EQ(printed["state_dir_space"]["disk_full"], true);
  std::printf("  while full: Waiting %s; Oldest %s; Free space %s\n", status_field(text.out, "Waiting")->c_str(),
              oldest.c_str(), free.c_str());

  // Room again: every file is taken in by itself, and the lines go.
  limit_file_size(RLIM_INFINITY);
  ASSERT_TRUE(eventually([&] { return shard_count("live") == made.size(); }, 90s)) << daemon_log();
  ASSERT_TRUE(eventually([&] { return !get_json("/v1/status")["state_dir_space"]["disk_full"].get<bool>(); }, 30s));
  text = dedupctl({"status"});
  EXPECT_EQ(text.code, 0) << text.out;
  EXPECT_EQ(status_field(text.out, "Waiting"), std::nullopt) << text.out;
  EXPECT_EQ(status_field(text.out, "Oldest"), std::nullopt) << text.out;
  EXPECT_TRUE(std::regex_match(status_field(text.out, "Free space").value_or(""),
                               std::regex("[0-9.]+ (B|[KMGTPE]iB) of [0-9.]+ (B|[KMGTPE]iB)")))
      << text.out;
}

}  // namespace
}  // namespace dedupd::reliability
