#include "daemon/config/reload_keys.hpp"

#include "daemon/config/key_table.hpp"

namespace dedupd::daemon::config {

std::vector<std::string> changes_waiting_for_restart(const Config& running, const Config& next) {
  std::vector<std::string> out;
  for (const auto& k : config_keys())
    if (k.reload == Reload::restart && !k.same(running, next))
      out.push_back(k.name + " (stays " + k.shown(running) + ")");
  return out;
}

Config as_reload_applies(const Config& running, Config next) {
  for (const auto& k : config_keys())
    if (k.reload == Reload::restart) k.copy(running, next);
  return next;
}

}  // namespace dedupd::daemon::config
