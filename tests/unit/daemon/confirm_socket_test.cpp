// The datagram socket that carries the CAS's status (daemon/learn/
// confirm_socket): who may send, and what is bound or adopted.
#include "daemon/learn/confirm_socket.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include "tests/support/temp_dir.hpp"
#include "tests/unit/daemon/learn_ids.hpp"

namespace dedupd::daemon::learn {
namespace {

using testing::kId;

TEST(LearnConfirmation, OnlyRootDedupdsUserOrTheEndpointsGroupIsBelieved) {
  const uid_t me = geteuid();
  EXPECT_TRUE(may_confirm({getpid(), 0, 12345}, std::nullopt));
  EXPECT_TRUE(may_confirm({getpid(), me, 12345}, std::nullopt));
  const uid_t stranger = me == 0 ? 4242 : me + 1;
  EXPECT_FALSE(may_confirm({getpid(), stranger, 4243}, std::nullopt));
  EXPECT_FALSE(may_confirm({getpid(), stranger, 4243}, gid_t(4244)));
  EXPECT_TRUE(may_confirm({getpid(), stranger, 4244}, gid_t(4244)));
  // A supplementary group, as the kernel lists this process's.
  std::vector<gid_t> groups(64);
  int n = getgroups(int(groups.size()), groups.data());
  if (n > 0 && groups[0] != 4243) {
    EXPECT_TRUE(may_confirm({getpid(), stranger, 4243}, groups[0]));
  }
}

TEST(LearnConfirmation, TheSocketTakesDatagramsAndSaysWhoSentThem) {
  tests::TempDir dir("learn");
  const std::string path = dir.path() + "/learn.sock";
  auto s = ConfirmSocket::bind(path);
  ASSERT_TRUE(s) << s.error().to_string();
  int out = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(out, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  // A shard upload's report, a download's (download_report.hpp), and neither.
  for (std::string msg : {"<190>Nov 27 10:00:00 dedupd_learn: " + kId + " 200",
                          std::string("<190>Nov 27 10:00:00 dedupd_learn: xet-download 206 4096 HIT h:443 \"-\" \"-\""),
                          std::string("garbage")})
    ASSERT_EQ(::sendto(out, msg.data(), msg.size(), 0, reinterpret_cast<sockaddr*>(&addr), sizeof addr),
              ssize_t(msg.size()));
  ::close(out);
  auto got = s->receive(std::nullopt);  // this process is dedupd's own user
  ASSERT_EQ(got.believed.size(), 1u);
  EXPECT_EQ(got.believed[0].request_id, kId);
  ASSERT_EQ(got.downloads.size(), 1u);
  EXPECT_EQ(got.downloads[0].body_bytes, 4096u);
  EXPECT_EQ(got.unreadable, 1u);
  EXPECT_EQ(got.refused_senders, 0u);
  EXPECT_TRUE(s->receive(std::nullopt).believed.empty());
  // A second dedupd's socket replaces a stale one; the file goes with it.
  { auto again = ConfirmSocket::bind(dir.path() + "/other.sock"); }
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/other.sock"));
  auto bad = ConfirmSocket::bind(dir.path() + "/" + std::string(200, 'x'));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().rule, "learn.socket");
}

// The socket dedupd.socket passes: taken as it is (credentials turned on,
// its path read back for messages), and left in place when dedupd lets it
// go, since the unit keeps listening on it across dedupd's restarts.
TEST(LearnConfirmation, AnAdoptedSocketIsBelievedAndNeverRemoved) {
  tests::TempDir dir("learn-adopt");
  const std::string path = dir.path() + "/passed.sock";
  int fd = ::socket(AF_UNIX, SOCK_DGRAM, 0);  // as systemd makes it: no SO_PASSCRED asked
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  {
    auto s = ConfirmSocket::adopt(fd);
    ASSERT_TRUE(s) << s.error().to_string();
    EXPECT_EQ(s->path(), path);
    EXPECT_TRUE(s->from_systemd());
    int out = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    const std::string msg = kId + " 201";
    ASSERT_EQ(::sendto(out, msg.data(), msg.size(), 0, reinterpret_cast<sockaddr*>(&addr), sizeof addr),
              ssize_t(msg.size()));
    ::close(out);
    auto got = s->receive(std::nullopt);
    ASSERT_EQ(got.believed.size(), 1u);  // the sender's credentials came with it
    EXPECT_EQ(got.refused_senders, 0u);
  }
  EXPECT_TRUE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace dedupd::daemon::learn
