// What every verb gets: where to write, the global options, and how to read
// the environment. Tests build one over string streams, so no verb touches
// std::cout or getenv directly.
#pragma once

#include <functional>
#include <iosfwd>
#include <optional>
#include <string>

#include "cli/output.hpp"

namespace dedupctl {

struct Io {
  std::ostream& out;
  std::ostream& err;
  std::istream& in;
  bool out_is_tty = false;
  // Returns the variable's value, or nullopt when unset.
  std::function<std::optional<std::string>(const char*)> getenv;
  // The descriptor behind `out` when it has one (-1 for string streams): a
  // large answer written to a file is kept out of the page cache through it.
  int out_fd = -1;
};

struct Options {
  std::string socket;  // empty: resolve_socket() decides
  bool json = false;
  bool quiet = false;
  double timeout_s = 30;  // whole request; connecting has its own 5 s
};

struct Context {
  Io& io;
  Options opt;
  Style style;  // colour on or off, decided once from tty + NO_COLOR

  std::ostream& out() { return io.out; }
  std::ostream& err() { return io.err; }
  // Human output is suppressed by -q and replaced by --json.
  bool human() const { return !opt.json && !opt.quiet; }
};

}  // namespace dedupctl
