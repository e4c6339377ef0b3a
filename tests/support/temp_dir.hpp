// A fresh directory per test under $TMPDIR (mkdtemp), removed with everything
// in it afterwards. Paths come out as strings: what the APIs under test and
// the command lines of the programs they start take.
#pragma once

#include <string>
#include <string_view>

namespace dedupd::tests {

// Makes "$TMPDIR/dedupd-<prefix>-XXXXXX" and returns its path; aborts when it
// cannot (nothing a test does after that would mean anything). For a
// directory that outlives a scope; TempDir removes its own.
std::string make_temp_dir(std::string_view prefix);

class TempDir {
 public:
  // `prefix` names the directory, so a leftover says which test made it.
  explicit TempDir(std::string_view prefix = "test") : path_(make_temp_dir(prefix)) {}
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string operator/(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  std::string path_;
};

// Writes `bytes` to `path`, replacing what was there; throws when it cannot.
void write_file(const std::string& path, std::string_view bytes);

}  // namespace dedupd::tests
