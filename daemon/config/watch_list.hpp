// The `watch` key: a list whose entries are a path, or a mapping of their
// own keys (path, recursive, manage, cas), with rules across entries (one
// steward per cache). The key table binds `watch` to this value kind.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "daemon/config/config.hpp"
#include "daemon/config/yaml_reader.hpp"

namespace dedupd::daemon::config {

struct WatchListValue {
  using Value = std::vector<WatchDir>;
  // An empty value ("watch:") watches nothing.
  std::optional<Value> parse(YamlReader& r, const std::string& key, const YAML::Node& v) const;
  std::string show(const Value& dirs) const;
  std::string bounds() const { return ""; }
};

}  // namespace dedupd::daemon::config
