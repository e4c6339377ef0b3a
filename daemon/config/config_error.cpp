#include "daemon/config/config_error.hpp"

namespace dedupd::daemon::config {

std::string ConfigError::to_string(const std::string& file) const {
  std::string out = file;
  if (line > 0) out += ":" + std::to_string(line);
  out += ": ";
  if (!key.empty()) out += key + ": ";
  return out + message;
}

}  // namespace dedupd::daemon::config
