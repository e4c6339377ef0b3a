#include "daemon/config/yaml_reader.hpp"

namespace dedupd::daemon::config {

int line_of(const YAML::Node& n) { return n.Mark().is_null() ? 0 : n.Mark().line + 1; }

std::string YamlReader::enter(const YAML::const_iterator& it, const std::string& prefix) {
  key_line_ = line_of(it->first);
  std::string dotted = prefix.empty() ? it->first.Scalar() : prefix + "." + it->first.Scalar();
  set_.insert_or_assign(dotted, key_line_);
  return dotted;
}

std::optional<int> YamlReader::line_set(const std::string& dotted) const {
  auto it = set_.find(dotted);
  if (it == set_.end()) return std::nullopt;
  return it->second;
}

void YamlReader::fail(const std::string& key, const YAML::Node& at, std::string message) {
  // An empty value ("socket:") has its mark on the following line; the
  // key's own line is what the user wants to see.
  int line = at.IsNull() || line_of(at) == 0 ? key_line_ : line_of(at);
  errors.push_back({key, line, std::move(message)});
}

void YamlReader::fail_at(const std::string& key, int line, std::string message) {
  errors.push_back({key, line, std::move(message)});
}

void YamlReader::unknown(const std::string& key, const YAML::Node& at, const std::string& known) {
  fail(key, at, "unknown key (known here: " + known + ")");
}

bool YamlReader::scalar(const std::string& key, const YAML::Node& v, const std::string& what, std::string& out) {
  if (!v.IsScalar() || v.Scalar().empty()) {
    fail(key, v,
         "expected " + what +
             (v.IsSequence() ? ", got a list"
              : v.IsMap()    ? ", got a mapping"
                             : ", got nothing"));
    return false;
  }
  out = v.Scalar();
  return true;
}

}  // namespace dedupd::daemon::config
