// A secret written to the state directory: 0600, fsynced, put in place by
// rename, so a reader finds the old secret or the whole new one.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace dedupd::daemon::keys {

// nullopt once `text` is in `file`; else why not (the temporary file is gone).
std::optional<std::string> write_secret_file(const std::filesystem::path& file, const std::string& text);

}  // namespace dedupd::daemon::keys
