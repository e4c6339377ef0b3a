// Where dedupd listens and who may speak there (daemon/supervisor/sockets):
// the groups of the admin routes and of the local Xet endpoint, where the
// learning socket goes, and the sockets systemd passed taken before anything
// listens (the learner adopting its own). The parsing of LISTEN_FDS itself is
// in listen_env_test.cpp, the passed sockets told apart in
// listen_fds_test.cpp; a socket-activated daemon in
// tests/integration/lifecycle_test.cpp.
#include "daemon/supervisor/sockets.hpp"

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "daemon/learn/learner.hpp"
#include "daemon/loop/event_loop.hpp"
#include "index/index.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/unit/daemon/in_child.hpp"
#include "tests/unit/daemon/index_in.hpp"

namespace dedupd::daemon::supervisor {
namespace {

TEST(Sockets, GroupsAreLookedUpByNameAndAnUnknownOneIsNone) {
  EXPECT_EQ(admin_gid_of(std::nullopt), std::nullopt);
  EXPECT_EQ(admin_gid_of(std::string("root")), gid_t(0));
  EXPECT_EQ(admin_gid_of(std::string("no-such-group-of-dedupd")), std::nullopt);
  config::XetEndpointConfig e;
  e.group = "root";
  EXPECT_EQ(endpoint_gid_of(e), gid_t(0));
  e.group = "no-such-group-of-dedupd";
  EXPECT_EQ(endpoint_gid_of(e), std::nullopt);
  // Unset: the package's group, where the system has it.
  e.group.reset();
  const struct group* packaged = ::getgrnam(config::kPackageEndpointGroup);
  EXPECT_EQ(endpoint_gid_of(e), packaged ? std::optional<gid_t>(packaged->gr_gid) : std::nullopt);
}

TEST(Sockets, TheLearningSocketIsBesideTheApisUnlessSaidOtherwise) {
  config::Config c;
  c.socket = "/run/dedupd/dedupd.sock";
  c.xet_endpoint.config.clear();
  EXPECT_EQ(learn_socket_of(c), "") << "no endpoint: nothing is learned";
  c.xet_endpoint.config = "/etc/dedupd/xet-endpoint.conf";
  EXPECT_EQ(learn_socket_of(c), "/run/dedupd/dedupd-learn.sock");
  c.xet_endpoint.learn_socket = "/run/other/learn.sock";
  EXPECT_EQ(learn_socket_of(c), "/run/other/learn.sock");
}

// What take_activated_sockets() does in a child given a stream socket at fd
// 3 and, with `learn`, a datagram socket at fd 4, as systemd passes them:
// "api=<fd> listening=<0|1>", or "refused" when it returned nullopt.
std::string taken(bool learn, bool stream_api = true) {
  tests::TempDir dir("sockets");
  return daemon::testing::in_child([&] {
    auto bound = [&](int type, const std::string& name) {
      int fd = ::socket(AF_UNIX, type, 0);
      sockaddr_un a{};
      a.sun_family = AF_UNIX;
      std::strncpy(a.sun_path, (dir.path() + "/" + name).c_str(), sizeof a.sun_path - 1);
      // A socket that cannot be bound is none: the child reports what that gives.
      if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return -1;
      if (type == SOCK_STREAM && ::listen(fd, 4) != 0) return -1;
      return ::fcntl(fd, F_DUPFD, 20);
    };
    ::dup2(bound(stream_api ? SOCK_STREAM : SOCK_DGRAM, "api.sock"), 3);
    if (learn) ::dup2(bound(SOCK_DGRAM, "learn.sock"), 4);
    ::setenv("LISTEN_FDS", learn ? "2" : "1", 1);
    ::setenv("LISTEN_PID", std::to_string(::getpid()).c_str(), 1);
    auto idx = daemon::testing::open_index_in(dir / "index");
    loop::EventLoop loop;
    learn::Learner learner(*idx, loop);
    auto api = take_activated_sockets(learner);
    return api ? "api=" + std::to_string(*api) + " listening=" + (learner.stats().listening ? "1" : "0")
               : std::string("refused");
  });
}

TEST(Sockets, TheSocketsSystemdPassedAreTakenAndTheLearnerAdoptsItsOwn) {
  EXPECT_EQ(taken(false), "api=3 listening=0");
  EXPECT_EQ(taken(true), "api=3 listening=1");
  EXPECT_EQ(taken(false, /*stream_api=*/false), "refused") << "a datagram socket alone is no API socket";
}

TEST(Sockets, WithoutActivationTheServerBindsItsOwn) {
  ::unsetenv("LISTEN_FDS");
  ::unsetenv("LISTEN_PID");
  tests::TempDir dir("sockets");
  auto idx = daemon::testing::open_index_in(dir / "index");
  ASSERT_TRUE(idx);
  loop::EventLoop loop;
  learn::Learner learner(*idx, loop);
  EXPECT_EQ(take_activated_sockets(learner), -1);
  EXPECT_FALSE(learner.stats().listening);
}

}  // namespace
}  // namespace dedupd::daemon::supervisor
