// A benchmark's scratch directory under the folder its --dir names (not
// $TMPDIR: the disk under test is the point), removed with everything in it
// when the run ends, however it ends short of a crash.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace dedupd::bench {

class ScratchDir {
 public:
  // base/<name>-<pid>, created.
  ScratchDir(const std::filesystem::path& base, const std::string& name)
      : path_(base / (name + "-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path_);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace dedupd::bench
