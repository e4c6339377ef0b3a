#include "xetcache/cas_url.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <span>

#include "shard/keys.hpp"

namespace dedupd::xetcache {

namespace {

bool ascii_alnum(unsigned char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// base64 with '-' and '_' (RFC 4648's URL alphabet), without padding.
std::string base64_url(std::span<const std::uint8_t> in) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  std::size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    std::uint32_t v = std::uint32_t(in[i]) << 16 | std::uint32_t(in[i + 1]) << 8 | in[i + 2];
    for (int s = 18; s >= 0; s -= 6) out += kAlphabet[(v >> s) & 63];
  }
  if (std::size_t left = in.size() - i; left > 0) {
    std::uint32_t v = std::uint32_t(in[i]) << 16 | (left == 2 ? std::uint32_t(in[i + 1]) << 8 : 0);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    if (left == 2) out += kAlphabet[(v >> 6) & 63];
  }
  return out;
}

}  // namespace

std::optional<std::string> normalize_cas_url(std::string_view url) {
  for (char c : url)
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) return std::nullopt;
  std::string scheme;
  std::string_view rest;
  if (auto p = url.find("://"); p != std::string_view::npos) {
    scheme = lower(url.substr(0, p));
    rest = url.substr(p + 3);
  }
  if (scheme != "http" && scheme != "https") return std::nullopt;
  if (rest.find_first_of("?#@\\") != std::string_view::npos) return std::nullopt;
  std::string_view authority = rest.substr(0, rest.find('/'));
  std::string_view path = rest.substr(authority.size());
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  std::string_view host = authority, port;
  // A bracketed IPv6 literal holds colons of its own.
  std::size_t host_end = authority.starts_with('[') ? authority.find(']') : authority.rfind(':');
  if (authority.starts_with('[')) {
    if (host_end == std::string_view::npos) return std::nullopt;
    host = authority.substr(0, host_end + 1);
    std::string_view after = authority.substr(host_end + 1);
    if (!after.empty()) {
      if (after.front() != ':') return std::nullopt;
      port = after.substr(1);
    }
  } else if (host_end != std::string_view::npos) {
    host = authority.substr(0, host_end);
    port = authority.substr(host_end + 1);
  }
  if (host.empty()) return std::nullopt;
  // A name or IPv4 address; colons only inside an IPv6 literal's brackets,
  // or the port could not be told from the host the second time round.
  const bool literal = host.front() == '[';
  for (std::size_t i = literal ? 1 : 0; i < host.size() - (literal ? 1 : 0); ++i) {
    const char c = host[i];
    bool ok = literal ? (std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.')
                      : (ascii_alnum(static_cast<unsigned char>(c)) || c == '.' || c == '-');
    if (!ok) return std::nullopt;
  }
  if (literal && host.size() < 3) return std::nullopt;
  std::string out = scheme + "://" + lower(host);
  if (!port.empty()) {
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) return std::nullopt;
    bool default_port = (scheme == "http" && value == 80) || (scheme == "https" && value == 443);
    if (!default_port) out += ":" + std::to_string(value);
  } else if (host_end != std::string_view::npos && !authority.starts_with('[')) {
    return std::nullopt;  // "host:" with nothing after the colon
  }
  // Only characters that need no escaping anywhere dedupd writes a CAS
  // (JSON, logs, SQL parameters are bound anyway).
  for (char c : path)
    if (!ascii_alnum(static_cast<unsigned char>(c)) && std::string_view("-._~/%:").find(c) == std::string_view::npos)
      return std::nullopt;
  out += path;
  return out;
}

std::string client_cache_dir_name(std::string_view url_as_given) {
  std::string name;
  // Characters, not bytes, in the client (a Rust char): a non-ASCII URL,
  // which a CAS URL never is, would differ here from the client's name.
  for (char c : url_as_given.substr(0, 16)) name += ascii_alnum(static_cast<unsigned char>(c)) ? c : '_';
  shard::Hash h =
      shard::chunk_hash_of_data({reinterpret_cast<const std::uint8_t*>(url_as_given.data()), url_as_given.size()});
  name += '-';
  name += base64_url(std::span<const std::uint8_t>(h.data(), 32)).substr(0, 16);
  return name;
}

}  // namespace dedupd::xetcache
