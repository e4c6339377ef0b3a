// The values systemd writes into a service's environment for the protocol
// of sd_listen_fds(3), sd_watchdog_enabled(3) and sd_notify(3), read without
// libsystemd (which would bring five more libraries into every start).
// Numbers are plain decimal digits: anything else (a sign, a space, an empty
// value, too many digits) is refused rather than read as far as it goes, so
// a garbled value is reported, never guessed at.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace dedupd::daemon::systemd {

// `text` as a number no greater than `max`, or nullopt.
std::optional<std::uint64_t> env_number(std::string_view text, std::uint64_t max);

// The variable `name` of this process's environment; nullopt when unset.
// The view is valid until the variable is changed or unset.
std::optional<std::string_view> env_value(const char* name);

}  // namespace dedupd::daemon::systemd
