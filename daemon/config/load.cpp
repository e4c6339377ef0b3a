#include "daemon/config/load.hpp"

#include <fstream>
#include <sstream>

#include "daemon/config/key_table.hpp"
#include "daemon/config/yaml_reader.hpp"

namespace dedupd::daemon::config {

namespace {

namespace fs = std::filesystem;

// The keys of the mapping `v` at `prefix`; a mapping inside it
// ("xet_endpoint: {downloads: {...}}") holds the keys named
// "<prefix>.<its name>.*".
void load_keys(const std::string& prefix, const YAML::Node& v, YamlReader& r, Config& c) {
  const std::string known = config_names_under(prefix);
  for (auto it = v.begin(); it != v.end(); ++it) {
    const std::string name = r.enter(it, prefix);
    if (const ConfigKey* k = find_config_key(name)) k->load(r, it->second, c);
    else if (!config_names_under(name).empty() && it->second.IsMap()) load_keys(name, it->second, r, c);
    else if (!config_names_under(name).empty())
      r.fail(name, it->second, "expected a mapping (" + config_names_under(name) + ")");
    else r.unknown(name, it->first, known);
  }
}

void load_section(const ConfigSection& section, const YAML::Node& v, YamlReader& r, Config& c) {
  const std::string known = config_names_under(section.name);
  if (v.IsNull() && section.when_empty == WhenEmpty::defaults) return;
  if (v.IsNull() && section.when_empty == WhenEmpty::cleared) {
    const Config cleared;
    for (const auto& k : config_keys())
      if (k.section() == section.name) k.copy(cleared, c);
    return;
  }
  if (!v.IsMap()) return r.fail(section.name, v, "expected a mapping (" + known + ")");
  r.begin_section();
  load_keys(section.name, v, r, c);
  if (section.check) section.check(r, c);
}

void load_document(const YAML::Node& root, YamlReader& r, Config& c) {
  if (root.IsNull()) return;  // an empty file: all defaults
  if (!root.IsMap()) return r.fail("", root, "the configuration must be a mapping of keys to values");
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string name = r.enter(it, "");
    const ConfigKey* k = find_config_key(name);
    if (k && k->section().empty()) k->load(r, it->second, c);
    else if (const ConfigSection* s = find_config_section(name)) load_section(*s, it->second, r, c);
    else r.unknown(name, it->first, config_names_under(""));
  }
}

}  // namespace

ConfigResult load_config_text(const std::string& yaml, const fs::path& base_dir) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::ParserException& e) {
    return std::vector<ConfigError>{{"", e.mark.is_null() ? 0 : e.mark.line + 1, e.msg}};
  } catch (const YAML::Exception& e) {
    return std::vector<ConfigError>{{"", 0, e.what()}};
  }
  Config c = installed_defaults();
  YamlReader reader(base_dir);
  try {
    load_document(root, reader, c);
  } catch (const YAML::Exception& e) {  // defensive: a node shape the walk did not expect
    reader.fail_at("", e.mark.is_null() ? 0 : e.mark.line + 1, e.msg);
  }
  for (ConfigRule rule : config_rules()) rule(reader, c);
  if (!reader.errors.empty()) return reader.errors;
  return c;
}

ConfigResult load_config_file(const fs::path& file) {
  std::ifstream in(file);
  if (!in) return std::vector<ConfigError>{{"", 0, "cannot read the file"}};
  std::stringstream text;
  text << in.rdbuf();
  fs::path base = fs::absolute(file).parent_path();
  return load_config_text(text.str(), base);
}

}  // namespace dedupd::daemon::config
