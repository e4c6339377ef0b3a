#include "daemon/systemd/env_number.hpp"

#include <charconv>
#include <cstdlib>
#include <system_error>

namespace dedupd::daemon::systemd {

std::optional<std::uint64_t> env_number(std::string_view text, std::uint64_t max) {
  if (text.empty()) return std::nullopt;
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  // from_chars takes neither a sign nor spaces; it must also take it all.
  const auto [stop, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || stop != end || value > max) return std::nullopt;
  return value;
}

std::optional<std::string_view> env_value(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string_view(value);
}

}  // namespace dedupd::daemon::systemd
