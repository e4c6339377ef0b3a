// Admin routes check the caller with SO_PEERCRED: root or the admin group.
// The caller is a forked child that drops to nobody (65534); it needs root
// to do that, so these tests skip when not run as root.
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <cstring>

#include "api/routes.hpp"
#include "api_test_support.hpp"
#include "daemon/api/http/access.hpp"

namespace dedupd::daemon::testing {
namespace {

using ::testing::_;
using ::testing::HasSubstr;
using ::testing::Return;
using ::testing::StartsWith;

constexpr uid_t kNobody = 65534;
constexpr gid_t kNogroup = 65534;
constexpr gid_t kAdminGid = 4321;

struct ChildResult {
  bool connected = false;
  std::string reply;
};

// Forks, drops to nobody with exactly `groups` as supplementary groups, and
// sends `request` on a fresh connection. The child only makes system calls
// (it was forked from a threaded process).
ChildResult as_nobody(const std::string& socket_path, const std::string& request, const std::vector<gid_t>& groups) {
  int pipefd[2];
  if (pipe(pipefd) != 0) return {};
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_path.data(), std::min(socket_path.size(), sizeof addr.sun_path - 1));
  pid_t pid = fork();
  if (pid == 0) {
    close(pipefd[0]);
    if (setgroups(groups.size(), groups.data()) != 0 || setgid(kNogroup) != 0 || setuid(kNobody) != 0) _exit(2);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) _exit(3);
    const char* p = request.data();
    std::size_t left = request.size();
    while (left) {
      ssize_t n = write(fd, p, left);
      if (n <= 0) _exit(4);
      p += n;
      left -= std::size_t(n);
    }
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
      if (write(pipefd[1], buf, std::size_t(n)) != n) _exit(5);
    _exit(0);
  }
  close(pipefd[1]);
  ChildResult result;
  char buf[4096];
  ssize_t n;
  while ((n = read(pipefd[0], buf, sizeof buf)) > 0) result.reply.append(buf, std::size_t(n));
  close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  result.connected = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return result;
}

std::string post(std::string_view path) {
  return "POST " + std::string(path) + " HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
}
std::string get(std::string_view path) {
  return "GET " + std::string(path) + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
}

class PeerCredTest : public ApiTest {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to fork a caller as nobody";
    ApiTest::SetUp();
    // Let nobody reach the socket; the admin check is then the only gate.
    chmod(dir_.path().c_str(), 0755);
  }

  // Called after the test's EXPECT_CALLs: the server threads start after
  // them, which is the ordering ThreadSanitizer can see (it cannot see the
  // forked caller's socket traffic as synchronisation).
  void serve(mode_t mode = 0666) {
    start_server([mode](api::http::ServerOptions& o) {
      o.socket_mode = mode;
      o.admin_gid = kAdminGid;
    });
  }
};

TEST_F(PeerCredTest, NobodyMayReadButNotAdminister) {
  EXPECT_CALL(service_, rescan()).Times(0);
  EXPECT_CALL(service_, ingest(_, _)).Times(0);
  serve();
  auto r = as_nobody(socket_path_, post(dedupd::api::kRescan), {});
  ASSERT_TRUE(r.connected);
  EXPECT_THAT(r.reply, StartsWith("HTTP/1.1 403"));
  EXPECT_THAT(r.reply, HasSubstr("\"forbidden\""));
  EXPECT_THAT(r.reply, HasSubstr("uid 65534"));

  // Refused before the body is read.
  std::string ingest = "POST " + std::string(dedupd::api::kIngest) +
                       " HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello";
  EXPECT_THAT(as_nobody(socket_path_, ingest, {}).reply, StartsWith("HTTP/1.1 403"));
  std::string del = "DELETE " + std::string(dedupd::api::kShard) + std::string(64, '0') +
                    " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  EXPECT_THAT(as_nobody(socket_path_, del, {}).reply, StartsWith("HTTP/1.1 403"));
  EXPECT_THAT(as_nobody(socket_path_, post(std::string(dedupd::api::kExport) + "?format=swh-shard"), {}).reply,
              StartsWith("HTTP/1.1 403"));

  r = as_nobody(socket_path_, get(dedupd::api::kHealth), {});
  EXPECT_THAT(r.reply, StartsWith("HTTP/1.1 200"));
}

TEST_F(PeerCredTest, MembersOfTheAdminGroupMayAdminister) {
  EXPECT_CALL(service_, rescan()).WillOnce(Return(core::RescanResult{1, 1, 0}));
  serve();
  auto r = as_nobody(socket_path_, post(dedupd::api::kRescan), {kAdminGid});
  ASSERT_TRUE(r.connected);
  EXPECT_THAT(r.reply, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(r.reply, HasSubstr("\"ingested\":1"));
}

TEST_F(PeerCredTest, TheAdminGroupCanChangeAtRuntime) {
  EXPECT_CALL(service_, rescan()).Times(0);
  serve();
  server_->set_admin_gid(std::nullopt);  // root only now
  EXPECT_THAT(as_nobody(socket_path_, post(dedupd::api::kRescan), {kAdminGid}).reply, StartsWith("HTTP/1.1 403"));
}

TEST_F(PeerCredTest, TheSocketModeIsTheFirstGate) {
  serve(0660);
  auto r = as_nobody(socket_path_, get(dedupd::api::kHealth), {});
  EXPECT_FALSE(r.connected);  // EACCES on connect
}

// The decision itself, without sockets.
TEST(IsAdmin, RootGroupMembersAndNobodyElse) {
  using api::http::is_admin;
  using api::http::PeerCred;
  EXPECT_TRUE(api::http::is_admin(api::http::PeerCred{1, 0, 0, {}}, std::nullopt));
  EXPECT_FALSE(api::http::is_admin(api::http::PeerCred{1, 1000, 1000, {}}, std::nullopt));
  EXPECT_TRUE(api::http::is_admin(api::http::PeerCred{1, 1000, 50, {}}, gid_t(50)));
  EXPECT_TRUE(api::http::is_admin(api::http::PeerCred{1, 1000, 1000, {7, 50}}, gid_t(50)));
  EXPECT_FALSE(api::http::is_admin(api::http::PeerCred{1, 1000, 1000, {7, 51}}, gid_t(50)));
}

TEST(PeerOf, ReportsTheConnectingProcess) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  auto peer = api::http::peer_of(sv[0]);
  close(sv[0]);
  close(sv[1]);
  ASSERT_TRUE(peer.has_value());
  EXPECT_EQ(peer->pid, getpid());
  EXPECT_EQ(peer->uid, geteuid());
  EXPECT_EQ(peer->gid, getegid());
}

}  // namespace
}  // namespace dedupd::daemon::testing
