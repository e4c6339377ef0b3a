// A file's text, read whole: a daemon's log, or a value one of the
// PostgreSQL scripts (tests/fleet/pg_cluster, pg_formation) left in a file.
// Header-only: nothing to link.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace dedupd::tests {

// "" when the file cannot be read.
inline std::string file_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Without the trailing newlines and spaces: a pointer, port or url.
inline std::string file_value(const std::filesystem::path& p) {
  std::string out = file_text(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace dedupd::tests
