// dedupctl: the command-line client of dedupd. All logic lives in app.cpp
// so the tests can run it in-process.
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "cli/app.hpp"

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  dedupctl::Io io{std::cout,
                  std::cerr,
                  std::cin,
                  isatty(STDOUT_FILENO) == 1,
                  [](const char* name) -> std::optional<std::string> {
                    const char* v = std::getenv(name);
                    if (!v) return std::nullopt;
                    return std::string(v);
                  },
                  STDOUT_FILENO};
  std::vector<std::string> args(argv + 1, argv + argc);
  int code = dedupctl::run(args, io);
  std::cout.flush();
  return code;
}
