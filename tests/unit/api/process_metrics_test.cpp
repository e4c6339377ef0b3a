// The process's own numbers for /metrics (daemon/api/http/process_metrics),
// read from /proc and getrusage of this very process: they move as the
// process does what they count.
#include "daemon/api/http/process_metrics.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstddef>
#include <ctime>
#include <vector>

namespace dedupd::daemon::api::http {
namespace {

TEST(ProcessMetrics, DescriptorsAreCountedAndTheLimitIsTheSoftOne) {
  const ProcessNumbers before = read_process_numbers();
  ASSERT_TRUE(before.open_fds);
  std::vector<int> fds;
  for (int i = 0; i < 5; ++i) fds.push_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const ProcessNumbers during = read_process_numbers();
  for (int fd : fds) ::close(fd);
  ASSERT_TRUE(during.open_fds);
  EXPECT_EQ(*during.open_fds, *before.open_fds + 5);
  rlimit lim{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &lim), 0);
  ASSERT_TRUE(during.max_fds);
  EXPECT_EQ(*during.max_fds, lim.rlim_cur);
}

TEST(ProcessMetrics, MemoryAndCpuAreThisProcesss) {
  const ProcessNumbers p = read_process_numbers();
  ASSERT_TRUE(p.resident_bytes && p.virtual_bytes && p.cpu_seconds);
  EXPECT_GT(*p.resident_bytes, 0u);
  EXPECT_GE(*p.virtual_bytes, *p.resident_bytes);
  // Touching 64 MiB makes it resident (volatile stores: the compiler may not
  // leave them out, as it may a buffer nothing reads).
  constexpr std::size_t kBytes = 64u << 20;
  void* block = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(block, MAP_FAILED);
  auto* bytes = static_cast<volatile char*>(block);
  for (std::size_t i = 0; i < kBytes; i += 4096) bytes[i] = 1;
  const ProcessNumbers grown = read_process_numbers();
  ::munmap(block, kBytes);
  EXPECT_GE(*grown.resident_bytes, *p.resident_bytes + (32u << 20));
  EXPECT_GE(*p.cpu_seconds, 0.0);
  EXPECT_GE(*grown.cpu_seconds, *p.cpu_seconds);
}

TEST(ProcessMetrics, TheStartTimeIsWhenThisProcessBegan) {
  const auto start = process_start_time();
  ASSERT_TRUE(start);
  EXPECT_LE(*start, double(std::time(nullptr)) + 1);
  timespec boot{};
  ASSERT_EQ(::clock_gettime(CLOCK_BOOTTIME, &boot), 0);
  EXPECT_GE(*start, double(std::time(nullptr)) - double(boot.tv_sec) - 2) << "not before the machine booted";
}

}  // namespace
}  // namespace dedupd::daemon::api::http
