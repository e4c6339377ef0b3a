// The test cluster script's promise: a private cluster never outlives the
// test process that started it, however that process ends.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace dedupd::fleet::test {
namespace {

namespace fs = std::filesystem;

std::string first_line(const fs::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  return s;
}

// Gone, or a zombie that no init reaps (a container's first process may not).
bool running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

TEST(PgCluster, AClusterWhoseOwnerDiedIsStoppedAndDeleted) {
  // The owner: a process killed with SIGKILL, so nothing of it cleans up.
  pid_t owner = ::fork();
  ASSERT_GE(owner, 0);
  if (owner == 0) {
    ::execl("/bin/sleep", "sleep", "600", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  char tmpl[] = "/tmp/dedupd-fleet-pointer-XXXXXX";
  int fd = ::mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  ::close(fd);
  const fs::path pointer = tmpl;
  std::string start = std::string(DEDUPD_PG_CLUSTER) + " start '" + pointer.string() + "' " + std::to_string(owner);
  ASSERT_EQ(std::system(start.c_str()), 0) << start;
  const fs::path dir = first_line(pointer);
  ASSERT_FALSE(dir.empty());
  const pid_t postmaster = std::stoi(first_line(dir / "primary" / "postmaster.pid"));
  ASSERT_TRUE(running(postmaster)) << "the server runs while its owner does";
  ::kill(postmaster, SIGSTOP);  // as the outage tests leave it when they abort

  ::kill(owner, SIGKILL);
  ::waitpid(owner, nullptr, 0);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while ((fs::exists(pointer) || fs::exists(dir)) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(fs::exists(dir)) << "the cluster outlived its owner";
  EXPECT_FALSE(fs::exists(pointer));
  EXPECT_FALSE(running(postmaster)) << "its server still runs";
  if (fs::exists(pointer) && std::system((std::string(DEDUPD_PG_CLUSTER) + " stop '" + tmpl + "'").c_str()) != 0)
    ADD_FAILURE() << "could not stop the cluster left behind";
}

}  // namespace
}  // namespace dedupd::fleet::test
