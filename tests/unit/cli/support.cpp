#include "support.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "cli/app.hpp"

namespace dedupctl::testing {

Outcome run_cli(const std::vector<std::string>& args, const RunOptions& options) {
  std::ostringstream out, err;
  std::istringstream in(options.stdin_text);
  Io io{out, err, in, options.tty, [&](const char* name) -> std::optional<std::string> {
          auto it = options.env.find(name);
          if (it == options.env.end()) return std::nullopt;
          return it->second;
        }};
  int code = run(args, io);
  return {code, out.str(), err.str()};
}

std::string fixture(const std::string& name) { return std::string(DEDUPD_FIXTURE_DIR) + "/" + name; }

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace dedupctl::testing
