// Writing an output file so that it is either complete or not there: a
// temporary file beside it (same directory, so rename is atomic), fsync,
// rename. Failures are CliError 65 naming the path and errno.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace dedupctl {

class AtomicFile {
 public:
  // Creates "<path>.tmp.XXXXXX" (mode 0644 before umask).
  explicit AtomicFile(std::string path);
  ~AtomicFile();  // removes the temporary file unless commit() succeeded
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  int fd() const { return fd_; }
  void write(std::span<const std::uint8_t> bytes);
  // fsync, close, rename onto the path.
  void commit();
  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return tmp_; }

 private:
  std::string path_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace dedupctl
