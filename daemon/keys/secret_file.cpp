#include "daemon/keys/secret_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace dedupd::daemon::keys {

std::optional<std::string> write_secret_file(const std::filesystem::path& file, const std::string& text) {
  std::filesystem::path tmp = file;
  tmp += ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return "cannot write " + tmp.string() + ": " + std::strerror(errno);
  bool ok = ::write(fd, text.data(), text.size()) == ssize_t(text.size()) && ::fsync(fd) == 0;
  ::close(fd);
  std::error_code ec;
  if (ok) std::filesystem::rename(tmp, file, ec);
  if (!ok || ec) {
    std::filesystem::remove(tmp, ec);
    return "cannot store " + file.string() + (ec ? ": " + ec.message() : std::string(": write or fsync failed"));
  }
  return std::nullopt;
}

}  // namespace dedupd::daemon::keys
