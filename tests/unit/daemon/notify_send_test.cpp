// Notifications as systemd receives them: a real AF_UNIX datagram socket
// bound where NOTIFY_SOCKET points, a path or an abstract name, reading
// each message whole.
#include "daemon/systemd/notify_send.hpp"

#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>

#include "daemon/systemd/notify.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/unit/daemon/datagram_receiver.hpp"

namespace dedupd::daemon::systemd {
namespace {

using Receiver = daemon::testing::DatagramReceiver;

// A name of this test run's own in the abstract namespace.
std::string abstract_name(const char* what) { return "@dedupd-test-" + std::to_string(::getpid()) + "-" + what; }

TEST(NotifySend, ADatagramToAPath) {
  tests::TempDir dir("notify");
  Receiver systemd(dir / "notify");
  ASSERT_TRUE(systemd.bound());
  auto to = notify_address(dir / "notify");
  ASSERT_TRUE(to);
  ASSERT_TRUE(send_notification(*to, "READY=1\nSTATUS=ready"));
  EXPECT_EQ(systemd.next(), "READY=1\nSTATUS=ready");
  EXPECT_EQ(systemd.next(), std::nullopt);
}

TEST(NotifySend, ADatagramToAnAbstractName) {
  const std::string name = abstract_name("send");
  Receiver systemd(name);
  ASSERT_TRUE(systemd.bound());
  auto to = notify_address(name);
  ASSERT_TRUE(to);
  ASSERT_TRUE(send_notification(*to, "READY=1"));
  EXPECT_EQ(systemd.next(), "READY=1");
  // The same name without its leading NUL is a path no one bound.
  auto as_path = notify_address("/" + name.substr(1));
  ASSERT_TRUE(as_path);
  EXPECT_FALSE(send_notification(*as_path, "READY=1"));
}

TEST(NotifySend, NoOneListeningIsAnErrorNamingTheAddress) {
  tests::TempDir dir("notify");
  auto to = notify_address(dir / "nobody");
  ASSERT_TRUE(to);
  auto sent = send_notification(*to, "READY=1");
  ASSERT_FALSE(sent);
  EXPECT_EQ(sent.error().message, "notifying systemd on " + (dir / "nobody") + ": sendto: No such file or directory");
}

// What dedupd's notify calls send, NOTIFY_SOCKET read from the environment.
TEST(NotifySend, TheDaemonsNotificationsGoWhereNotifySocketSays) {
  const std::string name = abstract_name("notify");
  Receiver systemd(name);
  ASSERT_TRUE(systemd.bound());
  ::setenv("NOTIFY_SOCKET", name.c_str(), 1);
  notify_ready("12 shards");
  notify_watchdog();
  notify_extend_timeout(std::chrono::seconds(60));
  notify_stopping();
  ::unsetenv("NOTIFY_SOCKET");
  notify_status("not sent: no NOTIFY_SOCKET");
  EXPECT_EQ(systemd.next(), "READY=1\nSTATUS=12 shards");
  EXPECT_EQ(systemd.next(), "WATCHDOG=1");
  EXPECT_EQ(systemd.next(), "EXTEND_TIMEOUT_USEC=60000000");
  EXPECT_EQ(systemd.next(), "STOPPING=1");
  EXPECT_EQ(systemd.next(), std::nullopt) << "sent without NOTIFY_SOCKET";
}

}  // namespace
}  // namespace dedupd::daemon::systemd
