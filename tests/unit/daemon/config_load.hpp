// dedupd.yaml read from text as --check-config reads a file: the config
// tests' ways to expect a configuration or the errors it has.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

#include "daemon/config/load.hpp"

namespace dedupd::daemon::config {

inline Config load_ok(const std::string& yaml) {
  auto r = load_config_text(yaml, "/etc/dedupd");
  if (auto* errors = std::get_if<std::vector<ConfigError>>(&r)) {
    for (const auto& e : *errors) ADD_FAILURE() << e.to_string("test.yaml");
    return {};
  }
  return std::get<Config>(r);
}

inline std::vector<ConfigError> load_errors(const std::string& yaml) {
  auto r = load_config_text(yaml, "/etc/dedupd");
  if (std::holds_alternative<Config>(r)) {
    ADD_FAILURE() << "expected errors for:\n" << yaml;
    return {};
  }
  return std::get<std::vector<ConfigError>>(r);
}

// The single error of `yaml` names `key` on `line` and says `what`.
inline void expect_one_error(const std::string& yaml, const std::string& key, int line, const std::string& what) {
  auto errors = load_errors(yaml);
  ASSERT_EQ(errors.size(), 1u) << yaml;
  EXPECT_EQ(errors[0].key, key) << yaml;
  EXPECT_EQ(errors[0].line, line) << yaml;
  EXPECT_NE(errors[0].message.find(what), std::string::npos)
      << "message \"" << errors[0].message << "\" lacks \"" << what << "\"";
}

}  // namespace dedupd::daemon::config
