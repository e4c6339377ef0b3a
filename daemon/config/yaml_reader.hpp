// What every key's reading shares: the errors found so far (loading goes on
// after one, so a run reports every error in the file), the line to name
// for each, and which keys the file sets. Walks const nodes only: yaml-cpp's
// non-const operator[] would insert the keys it is asked about.
#pragma once

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "daemon/config/config_error.hpp"

namespace dedupd::daemon::config {

int line_of(const YAML::Node& n);

class YamlReader {
 public:
  // Relative paths in the file are taken relative to `base`.
  explicit YamlReader(std::filesystem::path base) : base_(std::move(base)) {}

  const std::filesystem::path& base() const { return base_; }

  // Enters the key `it` points at, under `prefix` ("" at the top, "limits",
  // "watch[2]"): its line is the one an empty value's error names, and it
  // counts as set in the file. Returns its dotted name ("limits.max_body_bytes").
  std::string enter(const YAML::const_iterator& it, const std::string& prefix);
  // The line of the key entered last.
  int key_line() const { return key_line_; }
  // Where the file set `dotted` (the last time), if it did.
  std::optional<int> line_set(const std::string& dotted) const;

  // An error at `at` (an empty value: at its key's line).
  void fail(const std::string& key, const YAML::Node& at, std::string message);
  // An error at a line of the caller's choosing (a rule across keys).
  void fail_at(const std::string& key, int line, std::string message);
  void unknown(const std::string& key, const YAML::Node& at, const std::string& known);
  // Marks where a section's keys begin, for its rule: has it an error?
  void begin_section() { section_start_ = errors.size(); }
  bool section_clean() const { return errors.size() == section_start_; }

  // A non-empty scalar, else an error "expected <what>, got ...".
  bool scalar(const std::string& key, const YAML::Node& v, const std::string& what, std::string& out);

  std::vector<ConfigError> errors;

 private:
  std::filesystem::path base_;
  int key_line_ = 0;
  std::map<std::string, int> set_;  // dotted key -> its line (the last, if set twice)
  std::size_t section_start_ = 0;
};

}  // namespace dedupd::daemon::config
