// One problem of a configuration file, as --check-config prints it and a
// refused reload answers it: the key (dotted path, e.g.
// "expiry.delete_after" or "watch[2].path") and its line.
#pragma once

#include <string>

namespace dedupd::daemon::config {

struct ConfigError {
  std::string key;  // empty for whole-document problems (syntax, not a map)
  int line = 0;     // 1-based; 0 when unknown
  std::string message;

  // "<file>:<line>: <key>: <message>"
  std::string to_string(const std::string& file) const;
};

}  // namespace dedupd::daemon::config
