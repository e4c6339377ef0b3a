// dedupd's log lines as journald receives them: a real AF_UNIX datagram
// socket standing in for /run/systemd/journal/socket, one entry a line
// with its priority; and stderr, with a priority prefix, when no journald
// takes them.
#include "daemon/log/journal_sink.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>

#include "daemon/log/journal_entry.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/unit/daemon/datagram_receiver.hpp"
#include "tests/unit/daemon/in_child.hpp"

namespace dedupd::daemon::log {
namespace {

using Journald = daemon::testing::DatagramReceiver;

std::shared_ptr<spdlog::logger> logger_to(const std::string& socket_path) {
  auto logger = std::make_shared<spdlog::logger>("test", std::make_shared<JournalSink>("dedupd", socket_path));
  logger->set_level(spdlog::level::trace);
  return logger;
}

TEST(JournalSink, EachLineIsOneEntryWithItsPriority) {
  tests::TempDir dir("journal");
  Journald journald(dir / "socket");
  ASSERT_TRUE(journald.bound());
  auto logger = logger_to(dir / "socket");
  logger->info("ready in {} ms", 4);
  logger->error("cannot ingest {}:\n{}", "a.mdb", "bad magic");
  logger->debug("d");
  logger->warn("w");
  logger->critical("c");
  EXPECT_EQ(journald.next(), journal_entry(6, "dedupd", "ready in 4 ms"));
  EXPECT_EQ(journald.next(), journal_entry(3, "dedupd", "cannot ingest a.mdb:\nbad magic"));
  EXPECT_EQ(journald.next(), journal_entry(7, "dedupd", "d"));
  EXPECT_EQ(journald.next(), journal_entry(4, "dedupd", "w"));
  EXPECT_EQ(journald.next(), journal_entry(2, "dedupd", "c"));
  EXPECT_EQ(journald.next(), std::nullopt);
}

TEST(JournalSink, WithoutJournaldTheLineGoesToStderrWithItsPriority) {
  tests::TempDir dir("journal");
  const std::string got = daemon::testing::in_child([&] {
    const int err = ::open((dir / "stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ::dup2(err, STDERR_FILENO);
    logger_to(dir / "nobody")->error("no journald here");
    std::string out(256, '\0');
    const int in = ::open((dir / "stderr").c_str(), O_RDONLY | O_CLOEXEC);
    out.resize(std::size_t(std::max<ssize_t>(0, ::read(in, out.data(), out.size()))));
    return out;
  });
  EXPECT_EQ(got, "<3>no journald here\n");
}

}  // namespace
}  // namespace dedupd::daemon::log
