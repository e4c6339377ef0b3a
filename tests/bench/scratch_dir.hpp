// A benchmark's scratch directory under the folder its --dir names (not
// $TMPDIR: the disk under test is the point), removed with everything in it
// when the run ends, however it ends short of a crash; DEDUPD_BENCH_KEEP=1
// keeps it (to look into the index a run wrote, with mdb_stat).
#pragma once

#include <unistd.h>

#include <cstdlib>
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
    if (const char* keep = std::getenv("DEDUPD_BENCH_KEEP"); keep != nullptr && std::string(keep) == "1") return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace dedupd::bench
