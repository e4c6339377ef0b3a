// Durations ("7d", "90m", "0s", "never") and sizes ("16G", "512MiB", "1024")
// as people write them in the config file. Parsing returns a message rather
// than throwing so the config loader can attach the key and the line.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace dedupd::daemon::config {

struct ParseError {
  std::string message;
};

template <class T>
using Parsed = std::variant<T, ParseError>;

// A non-negative whole number of seconds followed by one unit: s, m, h, d
// (e.g. "30s", "7d"). Units are required so "7" is never silently seconds.
Parsed<std::chrono::seconds> parse_duration(std::string_view text);

// Like parse_duration, but "never" is accepted and gives nullopt.
Parsed<std::optional<std::chrono::seconds>> parse_duration_or_never(std::string_view text);

// Bytes: a whole number, optionally followed by K, M, G or T (powers of
// 1024) and an optional "B" or "iB": "16G", "16GiB", "512M", "1048576".
Parsed<std::uint64_t> parse_size(std::string_view text);

// Where a TCP listener binds: "HOST:PORT" with HOST an IPv4 address, an
// IPv6 address in brackets or "localhost" (127.0.0.1), and PORT 1 to 65535.
// Other names are refused: resolving one at start would make the listener
// depend on DNS, and the address it got would be a guess in the logs.
struct ListenAddress {
  std::string host;  // the address alone, as inet_pton takes it ("::1", not "[::1]")
  std::uint16_t port = 0;
  bool ipv6 = false;
  bool operator==(const ListenAddress&) const = default;
};
Parsed<ListenAddress> parse_listen_address(std::string_view text);

// "7d", "90m", "0s": the largest unit that divides exactly (for logs).
std::string format_duration(std::chrono::seconds d);

// "256M", "1K", "1000": the largest unit that divides exactly, as a config
// file would spell it (for messages).
std::string format_size(std::uint64_t bytes);

}  // namespace dedupd::daemon::config
