#include "fleet/answer_text.hpp"

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

}  // namespace

Result<std::vector<FleetShardRef>> parse_shard_list(std::string_view text) {
  std::vector<FleetShardRef> out;
  while (!text.empty()) {
    std::string_view item = next_piece(text, ' ');
    auto eq = item.find('=');
    if (eq == std::string_view::npos) return make_error(kRuleProtocol, "fleet shard list: an item without '='");
    auto h = Hash::parse_hex_bytes(item.substr(0, eq));
    if (!h) return make_error(kRuleProtocol, "fleet shard list: " + h.error().message);
    FleetShardRef ref{*h, {}};
    std::string_view hosts = item.substr(eq + 1);
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
