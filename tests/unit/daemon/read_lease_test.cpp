#include "daemon/ingest/read_lease.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "tests/support/temp_dir.hpp"

namespace dedupd::daemon::ingest {
namespace {

using namespace std::chrono_literals;

class ReadLeaseTest : public ::testing::Test {
 protected:
  // A lease break sends SIGIO, which would end the test process.
  void SetUp() override { ::signal(SIGIO, SIG_IGN); }
  tests::TempDir dir;
};

TEST_F(ReadLeaseTest, ATruncatingWriterWaitsUntilTheLeaseIsReleased) {
  auto file = dir / "s.mdb";
  tests::write_file(file, "shard bytes");
  std::atomic<bool> opened{false};
  std::thread writer;
  {
    ReadLease lease(file);
    if (lease.state() == ReadLease::State::unsupported) GTEST_SKIP() << "no leases on this file system";
    ASSERT_EQ(lease.state(), ReadLease::State::held);
    writer = std::thread([&] {
      int fd = ::open(file.c_str(), O_WRONLY | O_TRUNC);
      opened = true;
      ::close(fd);
    });
    std::this_thread::sleep_for(100ms);
    EXPECT_FALSE(opened) << "the writer truncated a leased file";
  }
  writer.join();
  EXPECT_TRUE(opened);
}

TEST_F(ReadLeaseTest, AFileOpenForWritingIsBusy) {
  auto file = dir / "w.mdb";
  tests::write_file(file, "partial");
  int fd = ::open(file.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ReadLease lease(file);
  EXPECT_NE(lease.state(), ReadLease::State::held);
  ::close(fd);
  if (lease.state() != ReadLease::State::unsupported) {
    EXPECT_EQ(lease.state(), ReadLease::State::busy);
  }
}

TEST_F(ReadLeaseTest, AMissingFileIsNotLeased) {
  ReadLease lease(dir / "missing.mdb");
  EXPECT_EQ(lease.state(), ReadLease::State::unsupported);
}

}  // namespace
}  // namespace dedupd::daemon::ingest
