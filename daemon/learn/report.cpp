#include "daemon/learn/report.hpp"

#include <charconv>

namespace dedupd::daemon::learn {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.remove_suffix(1);
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return s;
}

}  // namespace

bool is_request_id(std::string_view id) {
  if (id.size() != 32) return false;
  for (char c : id)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::string_view syslog_message(std::string_view datagram) {
  std::string_view msg = trim(datagram);
  if (!msg.empty() && msg.front() == '<') {
    // Syslog framing: the message follows the tag's ": ".
    const auto colon = msg.find(": ");
    if (colon == std::string_view::npos) return {};
    msg = trim(msg.substr(colon + 2));
  }
  return msg;
}

std::optional<Confirmation> parse_confirmation(std::string_view datagram) {
  std::string_view msg = syslog_message(datagram);
  auto space = msg.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  std::string_view id = msg.substr(0, space), status = trim(msg.substr(space + 1));
  if (!is_request_id(id)) return std::nullopt;
  unsigned code = 0;
  auto [end, ec] = std::from_chars(status.data(), status.data() + status.size(), code);
  if (ec != std::errc() || end != status.data() + status.size() || code < 100 || code > 599) return std::nullopt;
  return Confirmation{std::string(id), code};
}

}  // namespace dedupd::daemon::learn
