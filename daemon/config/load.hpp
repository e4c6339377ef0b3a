// YAML -> Config, the keys found in the key table (config/key_table.hpp).
// Every problem names the key (dotted path, e.g. "expiry.delete_after" or
// "watch[2].path") and its line, and loading keeps going so one run
// reports every error in the file.
#pragma once

#include <filesystem>
#include <string>
#include <variant>
#include <vector>

#include "daemon/config/config.hpp"
#include "daemon/config/config_error.hpp"

namespace dedupd::daemon::config {

using ConfigResult = std::variant<Config, std::vector<ConfigError>>;

// Relative paths in the file are taken relative to the file's directory.
ConfigResult load_config_file(const std::filesystem::path& file);
ConfigResult load_config_text(const std::string& yaml, const std::filesystem::path& base_dir);

}  // namespace dedupd::daemon::config
