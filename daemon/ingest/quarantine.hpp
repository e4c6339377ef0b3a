// Moving a rejected file out of the watched tree, so the cache owner sees
// it is gone and an operator can inspect it later.
#pragma once

#include <filesystem>
#include <string>
#include <variant>

namespace dedupd::daemon::ingest {

// Moves `file` into `dir` (created if missing) under its own name, or
// "<name>.1", "<name>.2", ... when taken. Works across file systems.
// Returns the new path, or a message.
std::variant<std::filesystem::path, std::string> move_to_quarantine(const std::filesystem::path& file,
                                                                    const std::filesystem::path& dir);

}  // namespace dedupd::daemon::ingest
