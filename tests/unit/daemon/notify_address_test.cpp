// NOTIFY_SOCKET's two forms (sd_notify(3)): a path, and '@' for a name in
// the abstract namespace, and the values that are neither.
#include "daemon/systemd/notify_address.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace dedupd::daemon::systemd {
namespace {

constexpr std::size_t kPathAt = offsetof(sockaddr_un, sun_path);

// The address's bytes that count, from sun_path on, or "error: <message>".
std::string address_of(std::string_view value) {
  auto a = notify_address(value);
  if (!a) return "error: " + a.error().message;
  EXPECT_EQ(a->address.sun_family, AF_UNIX);
  EXPECT_EQ(a->shown, value);
  return std::string(a->address.sun_path, a->length - kPathAt);
}

TEST(NotifyAddress, APathIsUsedAsItIsWithItsTerminator) {
  EXPECT_EQ(address_of("/run/systemd/notify"), std::string("/run/systemd/notify") + '\0');
}

TEST(NotifyAddress, AnAtIsTheLeadingNulOfAnAbstractNameWhichHasNoTerminator) {
  EXPECT_EQ(address_of("@/org/freedesktop/systemd1/notify"), std::string("\0/org/freedesktop/systemd1/notify", 33));
}

TEST(NotifyAddress, TheLongestThatFitAnAddress) {
  const std::size_t room = sizeof(sockaddr_un::sun_path);
  const std::string path = "/" + std::string(room - 2, 'p');  // and its terminator
  EXPECT_EQ(address_of(path), path + '\0');
  const std::string name = "@" + std::string(room - 1, 'n');
  EXPECT_EQ(address_of(name), '\0' + name.substr(1));
  const std::string too_long = "\" is longer than an AF_UNIX address holds (" + std::to_string(room) + " bytes)";
  EXPECT_EQ(address_of(path + "p"), "error: NOTIFY_SOCKET=\"" + path + "p" + too_long);
  EXPECT_EQ(address_of(name + "n"), "error: NOTIFY_SOCKET=\"" + name + "n" + too_long);
}

TEST(NotifyAddress, AnythingElseIsAnErrorNamingTheValue) {
  EXPECT_EQ(address_of(""), "error: NOTIFY_SOCKET=\"\" is empty");
  EXPECT_EQ(address_of("run/notify"),
            "error: NOTIFY_SOCKET=\"run/notify\" is neither an absolute path nor an abstract socket name ('@name')");
  EXPECT_EQ(address_of("vsock:2:1234"),
            "error: NOTIFY_SOCKET=\"vsock:2:1234\" is neither an absolute path nor an abstract socket name ('@name')");
  EXPECT_EQ(address_of("@"), "error: NOTIFY_SOCKET=\"@\" names no abstract socket");
  const std::string nul("/run/\0x", 7);
  EXPECT_EQ(address_of(nul), "error: NOTIFY_SOCKET=\"" + nul + "\" holds a NUL byte");
}

}  // namespace
}  // namespace dedupd::daemon::systemd
