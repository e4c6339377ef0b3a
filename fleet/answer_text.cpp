#include "fleet/answer_text.hpp"

#include <cstdint>
#include <string>

#include "fleet/host_name.hpp"

namespace dedupd::fleet {
namespace {

// The next piece up to `sep` (or the end); `rest` moves past it.
std::string_view next_piece(std::string_view& rest, char sep) {
  auto at = rest.find(sep);
  std::string_view piece = rest.substr(0, at);
  rest = at == std::string_view::npos ? std::string_view() : rest.substr(at + 1);
  return piece;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// A shard's CAS set from its hex: URLs of printable ASCII, one space between
// two, as the writer stores them (shard/cas_scope.hpp reads it as it is).
Result<std::string> cas_of_hex(std::string_view hex) {
  if (hex.empty() || hex.size() % 2 != 0) return make_error(kRuleProtocol, "fleet shard list: a CAS set of bad hex");
  std::string cas;
  cas.reserve(hex.size() / 2);
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    int hi = hex_digit(hex[i]), lo = hex_digit(hex[i + 1]);
    if (hi < 0 || lo < 0) return make_error(kRuleProtocol, "fleet shard list: a CAS set of bad hex");
    char ch = char(hi * 16 + lo);
    if (ch < ' ' || ch > '~' || (ch == ' ' && (cas.empty() || cas.back() == ' ')))
      return make_error(kRuleProtocol, "fleet shard list: a CAS set that is not URLs separated by one space");
    cas += ch;
  }
  if (cas.back() == ' ')
    return make_error(kRuleProtocol, "fleet shard list: a CAS set that is not URLs separated by one space");
  return cas;
}

}  // namespace

Result<std::vector<FleetShardRef>> parse_shard_list(std::string_view text) {
  std::vector<FleetShardRef> out;
  while (!text.empty()) {
    std::string_view item = next_piece(text, ' ');
    auto eq = item.find('=');
    if (eq == std::string_view::npos) return make_error(kRuleProtocol, "fleet shard list: an item without '='");
    auto h = Hash::parse_hex_bytes(item.substr(0, eq));
    if (!h) return make_error(kRuleProtocol, "fleet shard list: " + h.error().message);
    FleetShardRef ref{*h, {}, {}};
    std::string_view hosts = item.substr(eq + 1);
    if (auto semi = hosts.find(';'); semi != std::string_view::npos) {
      auto cas = cas_of_hex(hosts.substr(semi + 1));
      if (!cas) return cas.error();
      ref.cas = std::move(*cas);
      hosts = hosts.substr(0, semi);
    }
    while (!hosts.empty()) {
      std::string_view name = next_piece(hosts, ',');
      if (!valid_host_name(name))
        return make_error(kRuleProtocol, "fleet shard list: a holder that is not a host name");
      ref.holders.emplace_back(name);
    }
    out.push_back(std::move(ref));
  }
  return out;
}

Result<std::vector<Key>> parse_key_list(std::string_view text) {
  std::vector<Key> keys;
  while (!text.empty()) {
    auto k = Hash::parse_hex_bytes(next_piece(text, ','));
    if (!k) return make_error(kRuleProtocol, "live key list: " + k.error().message);
    keys.push_back(*k);
  }
  return keys;
}

}  // namespace dedupd::fleet
