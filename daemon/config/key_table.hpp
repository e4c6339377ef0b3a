// The keys of dedupd.yaml, each once (config/key_table.cpp): its dotted
// name, the kind of value it takes with its bounds, whether a reload applies
// it, and its line of documentation. The loader (config/load.cpp), a
// reload's list of what waits for a restart (config/reload_keys.hpp) and
// the README's table (config/key_docs.hpp, `dedupd --config-table`) are
// all read from it, so none of them can know a key the others do not.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/config/config.hpp"

namespace YAML {
class Node;
}

namespace dedupd::daemon::config {

class YamlReader;

// What a reload does with a changed key: apply it to the running dedupd,
// or keep the running value until a restart (and say so).
enum class Reload : std::uint8_t { applied, restart };

struct ConfigKey {
  std::string name;  // dotted, as in the file: "limits.max_body_bytes"
  Reload reload = Reload::applied;
  std::string doc;             // one line: the README's "meaning"
  std::string bounds;          // what the loader enforces, in the doc's words ("at least `1K`"); "" when none
  std::string unset = "none";  // what the key means while not set

  // Bound to its field of Config by the table:
  std::function<void(YamlReader&, const YAML::Node&, Config&)> load;  // on error: named, value kept
  std::function<std::string(const Config&)> show;                     // as the file spells it; "" when not set
  std::function<bool(const Config&, const Config&)> same;
  std::function<void(const Config& from, Config& to)> copy;

  // "limits" of "limits.max_body_bytes"; "" for a key at the top.
  std::string_view section() const;
  // show(), or `unset` for a value that is not set.
  std::string shown(const Config& c) const;
};

// What an empty section ("index:" alone) means.
enum class WhenEmpty : std::uint8_t {
  refused,   // an error: expected a mapping
  defaults,  // as if the section were left out
  cleared,   // every key of it as a default-constructed Config has it
};

struct ConfigSection {
  std::string name;  // "limits"
  WhenEmpty when_empty = WhenEmpty::refused;
  // A rule across its keys, after they are read (a mapping only), or null.
  void (*check)(YamlReader&, Config&) = nullptr;
};

using ConfigRule = void (*)(YamlReader&, Config&);

// In the order the file's documentation and error messages list them.
const std::vector<ConfigKey>& config_keys();
const std::vector<ConfigSection>& config_sections();
// Rules over the whole file, after every key is read, in order.
const std::vector<ConfigRule>& config_rules();

const ConfigKey* find_config_key(std::string_view dotted);
const ConfigSection* find_config_section(std::string_view name);
// The names known under `section` ("" for the top), as errors list them:
// "delete_after, max_bytes, check_interval".
std::string config_names_under(std::string_view section);

}  // namespace dedupd::daemon::config
