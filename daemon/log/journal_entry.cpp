#include "daemon/log/journal_entry.hpp"

#include <cstdint>

namespace dedupd::daemon::log {

namespace {

void add_field(std::string& entry, std::string_view name, std::string_view value) {
  entry += name;
  if (value.find('\n') == std::string_view::npos) {
    entry += '=';
    entry += value;
  } else {
    entry += '\n';
    auto size = std::uint64_t(value.size());
    for (int i = 0; i < 8; ++i, size >>= 8) entry += char(size & 0xff);
    entry += value;
  }
  entry += '\n';
}

}  // namespace

std::string journal_entry(int priority, std::string_view identifier, std::string_view message) {
  std::string entry;
  entry.reserve(message.size() + identifier.size() + 48);
  add_field(entry, "PRIORITY", std::to_string(priority));
  add_field(entry, "SYSLOG_IDENTIFIER", identifier);
  add_field(entry, "MESSAGE", message);
  return entry;
}

}  // namespace dedupd::daemon::log
