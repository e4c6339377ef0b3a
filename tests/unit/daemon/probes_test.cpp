// The steward's real probes (daemon/xetcache/probes): what /proc says of a
// process, the client's logs dir, the file layer. The decisions made from
// them are tested in tests/unit/xetcache/rules_test.cpp and, driven through
// CacheSteward::run, in steward_test.cpp.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>

#include "daemon/xetcache/probes.hpp"
#include "tests/support/temp_dir.hpp"

namespace dedupd::daemon::xetcache {
namespace {

namespace fs = std::filesystem;

TEST(StewardProbes, ARunningProcessHasStartTicksAndAnEndedOneDoesNotRun) {
  ProcessTable& table = system_process_table();
  const ProcessStart self = table.process(::getpid());
  EXPECT_TRUE(self.running);
  ASSERT_TRUE(self.start_ticks);
  auto boot = table.boot_clock();
  ASSERT_TRUE(boot);
  EXPECT_GT(boot->ticks_per_second, 0u);
  // This process started after the boot and before now, in ticks since boot.
  const auto now_ticks = std::uint64_t(std::time(nullptr) - boot->boot_unix + 2) * boot->ticks_per_second;
  EXPECT_LE(*self.start_ticks, now_ticks);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  EXPECT_FALSE(table.process(child).running);
}

TEST(StewardProbes, TheLogsDirIsListedWithItsErrno) {
  tests::TempDir dir;
  StewardFiles& files = system_steward_files();
  EXPECT_EQ(files.list_logs(dir / "logs").err, ENOENT);
  fs::create_directories(dir / "logs");
  tests::write_file(dir / "logs/xet_20261124T044239620-0500_8006.log", "");
  fs::create_symlink(dir / "elsewhere", dir / "logs/xet_20261124T044239620-0500_8007.log");
  auto listed = files.list_logs(dir / "logs");
  EXPECT_EQ(listed.err, 0);
  ASSERT_EQ(listed.entries.size(), 1u);  // regular files only
  EXPECT_EQ(listed.entries[0].name, "xet_20261124T044239620-0500_8006.log");
}

TEST(StewardProbes, MonotonicSecondsDoNotGoBack) {
  StewardClock& clock = system_steward_clock();
  const auto a = clock.monotonic_s();
  EXPECT_GE(clock.monotonic_s(), a);
  EXPECT_GT(clock.wall_s(), 1'700'000'000u);
}

}  // namespace
}  // namespace dedupd::daemon::xetcache
