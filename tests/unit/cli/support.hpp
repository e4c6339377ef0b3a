// Running dedupctl in-process: arguments in, exit code and both streams out.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "shard/hash.hpp"

namespace dedupctl::testing {

struct Outcome {
  int code;
  std::string out;
  std::string err;
};

struct RunOptions {
  std::string stdin_text;
  std::map<std::string, std::string> env;  // the only variables the run sees
  bool tty = false;
};

Outcome run_cli(const std::vector<std::string>& args, const RunOptions& options = {});

std::string fixture(const std::string& name);
std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& bytes);

// A fresh directory under $TMPDIR, removed with its contents at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace dedupctl::testing
