#include "cli/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "cli/exit_codes.hpp"

namespace dedupctl {

namespace {
CliError io_error(const std::string& what, const std::string& path, int e) {
  return CliError(kBadInput, "cannot " + what + " " + path + ": " + std::strerror(e));
}
}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  std::vector<char> tmpl(path_.begin(), path_.end());
  for (char c : std::string_view(".tmp.XXXXXX")) tmpl.push_back(c);
  tmpl.push_back('\0');
  fd_ = ::mkostemp(tmpl.data(), O_CLOEXEC);
  if (fd_ < 0) throw io_error("create a temporary file for", path_, errno);
  tmp_ = tmpl.data();
  // mkstemp makes 0600; an output file is as readable as any other.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd_, 0666 & ~mask);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !tmp_.empty()) ::unlink(tmp_.c_str());
}

void AtomicFile::write(std::span<const std::uint8_t> bytes) {
  for (std::size_t done = 0; done < bytes.size();) {
    const ssize_t w = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw io_error("write", tmp_, w < 0 ? errno : EIO);
    done += std::size_t(w);
  }
}

void AtomicFile::commit() {
  if (::fsync(fd_) != 0) throw io_error("write", tmp_, errno);
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) throw io_error("write", tmp_, errno);
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) throw io_error("rename the output onto", path_, errno);
  committed_ = true;
}

}  // namespace dedupctl
