// One value of dedupd.yaml parsed by a value kind alone (daemon/config/
// value_types.hpp), as the key table would, keeping the reader's errors.
#pragma once

#include <string>

#include "daemon/config/yaml_reader.hpp"

namespace dedupd::daemon::config {

// `yaml` is a document of one key, "k: VALUE" (lines before it move it down):
// parses its value with `kind`; what the kind refused stays in `reader`.
struct ParseValue {
  YamlReader reader{"/etc/dedupd"};
  YAML::Node doc;

  template <class Kind>
  auto operator()(const Kind& kind, const std::string& yaml) {
    doc = YAML::Load(yaml);
    const YAML::Node& top = doc;
    auto it = top.begin();
    const std::string key = reader.enter(it, "");
    return kind.parse(reader, key, it->second);
  }
  std::string message() const { return reader.errors.empty() ? "" : reader.errors.back().message; }
};

}  // namespace dedupd::daemon::config
