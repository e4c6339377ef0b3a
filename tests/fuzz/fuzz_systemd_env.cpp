// What systemd puts in a service's environment, as dedupd reads it without
// libsystemd (daemon/systemd/): the numbers of LISTEN_PID, LISTEN_FDS,
// WATCHDOG_USEC and WATCHDOG_PID, and NOTIFY_SOCKET's address. The input is
// up to two values, split at the first newline.
//
// Properties beyond "no crash": a number read is all digits, in range, and
// reads back from its decimal form; a count of descriptors is passed only
// to the process LISTEN_PID names and ends at INT_MAX; a watchdog time is
// never 0; an address fits sockaddr_un and holds the value's bytes, the
// '@' as a NUL.
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "daemon/systemd/env_number.hpp"
#include "daemon/systemd/listen_env.hpp"
#include "daemon/systemd/notify_address.hpp"
#include "daemon/systemd/watchdog_env.hpp"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

constexpr pid_t kSelf = 4242;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dedupd::daemon::systemd;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const auto cut = in.find('\n');
  const std::string_view first = in.substr(0, cut);
  const std::string_view second = cut == std::string_view::npos ? std::string_view() : in.substr(cut + 1);

  for (std::uint64_t max : {std::uint64_t(10), std::uint64_t(INT_MAX), UINT64_MAX})
    if (auto n = env_number(first, max)) {
      check(*n <= max);
      check(first.find_first_not_of("0123456789") == std::string_view::npos);
      check(env_number(std::to_string(*n), max) == n);
    }

  if (auto n = listen_fd_count(first, second, kSelf)) {
    check(*n >= 0 && *n <= INT_MAX - kFirstListenFd);
    if (*n > 0) check(env_number(first, UINT64_MAX) == std::uint64_t(kSelf));
  } else {
    check(!n.error().message.empty());
  }

  if (auto t = watchdog_timeout(second, first, kSelf)) {
    if (*t) check((*t)->count() > 0);
  } else {
    check(!t.error().message.empty());
  }

  if (auto a = notify_address(in)) {
    check(a->length > offsetof(sockaddr_un, sun_path) && a->length <= sizeof(sockaddr_un));
    check(a->address.sun_family == AF_UNIX && a->shown == in);
    const char* bytes = a->address.sun_path;
    check(std::memcmp(bytes + 1, in.data() + 1, in.size() - 1) == 0);
    check(in[0] == '@' ? bytes[0] == '\0' : bytes[0] == '/');
  }
  return 0;
}
