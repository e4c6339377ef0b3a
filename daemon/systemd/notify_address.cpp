#include "daemon/systemd/notify_address.hpp"

#include <cstddef>
#include <cstring>

namespace dedupd::daemon::systemd {

namespace {

base::Error notify_address_error(std::string_view value, const std::string& why) {
  return base::Error{"systemd.notify_socket", 0, "NOTIFY_SOCKET=\"" + std::string(value) + "\" " + why, false};
}

}  // namespace

base::Result<NotifyAddress> notify_address(std::string_view value) {
  NotifyAddress out;
  constexpr std::size_t room = sizeof out.address.sun_path;
  if (value.empty()) return notify_address_error(value, "is empty");
  if (value.find('\0') != std::string_view::npos) return notify_address_error(value, "holds a NUL byte");
  if (value[0] != '/' && value[0] != '@')
    return notify_address_error(value, "is neither an absolute path nor an abstract socket name ('@name')");
  if (value == "@") return notify_address_error(value, "names no abstract socket");
  // A path needs its terminator in the address; an abstract name's leading
  // NUL takes the '@''s place.
  const bool abstract = value[0] == '@';
  if (value.size() + (abstract ? 0 : 1) > room)
    return notify_address_error(value, "is longer than an AF_UNIX address holds (" + std::to_string(room) + " bytes)");
  out.address.sun_family = AF_UNIX;
  std::memcpy(out.address.sun_path, value.data(), value.size());
  if (abstract) out.address.sun_path[0] = '\0';
  out.length = socklen_t(offsetof(sockaddr_un, sun_path) + value.size() + (abstract ? 0 : 1));
  out.shown = std::string(value);
  return out;
}

}  // namespace dedupd::daemon::systemd
