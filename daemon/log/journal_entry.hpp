// One journal entry in journald's native protocol (systemd.io's "Journal
// Native Protocol", the format sd_journal_send(3) writes without dedupd
// linking libsystemd): a field a line, "NAME=value\n", or, for a value
// holding a newline, "NAME\n", its length as 64-bit little-endian, the
// value and "\n".
#pragma once

#include <string>
#include <string_view>

namespace dedupd::daemon::log {

// PRIORITY (a syslog level, 0 emergency to 7 debug), SYSLOG_IDENTIFIER and
// MESSAGE, as spdlog's journal sink sent them.
std::string journal_entry(int priority, std::string_view identifier, std::string_view message);

}  // namespace dedupd::daemon::log
