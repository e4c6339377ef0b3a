#include "daemon/config/units.hpp"

#include <arpa/inet.h>

#include <charconv>
#include <limits>

namespace dedupd::daemon::config {

namespace {

// Splits "123abc" into 123 and "abc"; fails on no digits or overflow.
bool split_number(std::string_view text, std::uint64_t& number, std::string_view& suffix) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, number);
  if (ec != std::errc{} || ptr == text.data()) return false;
  suffix = std::string_view(ptr, std::size_t(end - ptr));
  return true;
}

bool multiply_fits(std::uint64_t a, std::uint64_t b, std::uint64_t limit) { return b == 0 || a <= limit / b; }

}  // namespace

Parsed<std::chrono::seconds> parse_duration(std::string_view text) {
  std::uint64_t n = 0;
  std::string_view unit;
  if (!split_number(text, n, unit))
    return ParseError{"bad duration \"" + std::string(text) +
                      "\": expected a whole number and a unit (s, m, h, d), e.g. \"7d\""};
  std::uint64_t scale = 0;
  if (unit == "s") scale = 1;
  else if (unit == "m") scale = 60;
  else if (unit == "h") scale = 3600;
  else if (unit == "d") scale = 86400;
  else if (unit.empty())
    return ParseError{"bad duration \"" + std::string(text) + "\": a unit is required (s, m, h, d)"};
  else
    return ParseError{"bad duration \"" + std::string(text) + "\": unknown unit \"" + std::string(unit) +
                      "\" (use s, m, h or d)"};
  // Keep far inside time_t so adding to "now" never overflows.
  constexpr std::uint64_t kMax = std::uint64_t(std::numeric_limits<std::int64_t>::max()) / 4;
  if (!multiply_fits(n, scale, kMax)) return ParseError{"bad duration \"" + std::string(text) + "\": too large"};
  return std::chrono::seconds(std::int64_t(n * scale));
}

Parsed<std::optional<std::chrono::seconds>> parse_duration_or_never(std::string_view text) {
  if (text == "never") return std::optional<std::chrono::seconds>{};
  auto d = parse_duration(text);
  if (auto* e = std::get_if<ParseError>(&d)) return ParseError{e->message + ", or \"never\""};
  return std::optional<std::chrono::seconds>(std::get<std::chrono::seconds>(d));
}

Parsed<std::uint64_t> parse_size(std::string_view text) {
  std::uint64_t n = 0;
  std::string_view unit;
  if (!split_number(text, n, unit))
    return ParseError{"bad size \"" + std::string(text) +
                      "\": expected a whole number of bytes, optionally with K, M, G or T, e.g. \"16G\""};
  std::uint64_t scale = 1;
  if (!unit.empty()) {
    char prefix = unit.front();
    std::string_view rest = unit.substr(1);
    switch (prefix) {
      case 'K':
      case 'k':
        scale = 1ull << 10;
        break;
      case 'M':
        scale = 1ull << 20;
        break;
      case 'G':
        scale = 1ull << 30;
        break;
      case 'T':
        scale = 1ull << 40;
        break;
      case 'B':
        scale = 1;
        rest = unit;
        break;
      default:
        return ParseError{"bad size \"" + std::string(text) + "\": unknown unit \"" + std::string(unit) +
                          "\" (use K, M, G or T)"};
    }
    if (prefix == 'B') {
      if (rest != "B")
        return ParseError{"bad size \"" + std::string(text) + "\": unknown unit \"" + std::string(unit) +
                          "\" (use K, M, G or T)"};
    } else if (!(rest.empty() || rest == "B" || rest == "iB")) {
      return ParseError{"bad size \"" + std::string(text) + "\": unknown unit \"" + std::string(unit) +
                        "\" (use K, M, G or T)"};
    }
  }
  if (!multiply_fits(n, scale, std::numeric_limits<std::uint64_t>::max()))
    return ParseError{"bad size \"" + std::string(text) + "\": too large"};
  return n * scale;
}

std::string format_duration(std::chrono::seconds d) {
  auto s = d.count();
  if (s != 0 && s % 86400 == 0) return std::to_string(s / 86400) + "d";
  if (s != 0 && s % 3600 == 0) return std::to_string(s / 3600) + "h";
  if (s != 0 && s % 60 == 0) return std::to_string(s / 60) + "m";
  return std::to_string(s) + "s";
}

std::string format_size(std::uint64_t bytes) {
  static constexpr char kUnits[] = "TGMK";
  for (int i = 0; i < 4; ++i) {
    std::uint64_t scale = 1ull << (10 * (4 - i));
    if (bytes != 0 && bytes % scale == 0) return std::to_string(bytes / scale) + kUnits[i];
  }
  return std::to_string(bytes);
}

Parsed<ListenAddress> parse_listen_address(std::string_view text) {
  const std::string quoted = "\"" + std::string(text) + "\"";
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon + 1 == text.size())
    return ParseError{"bad address " + quoted + ": expected HOST:PORT, e.g. \"127.0.0.1:9953\""};
  std::string_view host = text.substr(0, colon), port_text = text.substr(colon + 1);
  std::uint64_t port = 0;
  auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc{} || ptr != port_text.data() + port_text.size() || port == 0 || port > 65535)
    return ParseError{"bad address " + quoted + ": the port must be a number from 1 to 65535"};
  ListenAddress out;
  out.port = std::uint16_t(port);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    out.host = std::string(host.substr(1, host.size() - 2));
    out.ipv6 = true;
  } else if (host == "localhost") {
    out.host = "127.0.0.1";
  } else {
    out.host = std::string(host);
  }
  unsigned char binary[sizeof(in6_addr)];
  if (out.host.empty() || inet_pton(out.ipv6 ? AF_INET6 : AF_INET, out.host.c_str(), binary) != 1)
    return ParseError{"bad address " + quoted +
                      ": HOST must be an IPv4 address, an IPv6 address in brackets or localhost "
                      "(127.0.0.1:9953, [::1]:9953; 0.0.0.0:9953 or [::]:9953 for every address)"};
  return out;
}

}  // namespace dedupd::daemon::config
