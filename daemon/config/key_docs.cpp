#include "daemon/config/key_docs.hpp"

#include "daemon/config/config.hpp"
#include "daemon/config/key_table.hpp"

namespace dedupd::daemon::config {

std::string config_table_markdown() {
  const Config defaults = installed_defaults();
  std::string out = "| key | default | meaning |\n|---|---|---|\n";
  std::string restart;
  for (const auto& k : config_keys()) {
    const std::string value = k.show(defaults);
    out += "| `" + k.name + "` | " + (value.empty() ? k.unset : "`" + value + "`") + " | " + k.doc + " |\n";
    if (k.reload == Reload::restart) restart += (restart.empty() ? "`" : ", `") + k.name + "`";
  }
  return out +
         "\nA reload leaves these keys as they run until a restart, and names each one it finds changed: " + restart +
         ". It applies every other key.\n";
}

}  // namespace dedupd::daemon::config
