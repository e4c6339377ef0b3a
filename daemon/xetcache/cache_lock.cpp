#include "daemon/xetcache/cache_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "daemon/log/logging.hpp"

namespace dedupd::daemon::xetcache {

namespace {

constexpr const char* kStewardLockName = ".dedupd-xet-cache.lock";

std::string lock_host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

}  // namespace

// Closing lets another dedupd take the cache at once.
CacheLock::~CacheLock() {
  if (fd_ >= 0) ::close(fd_);
}

bool CacheLock::take(const std::filesystem::path& root) {
  if (held_) return true;
  const std::string path = (root / kStewardLockName).native();
  if (fd_ < 0) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      // Not lockable, not ours to manage: a second steward could not be ruled out.
      holder_ = std::string("cannot open the lock file: ") + std::strerror(errno);
      return false;
    }
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    char who[256] = {};
    const ssize_t n = ::pread(fd_, who, sizeof who - 1, 0);
    std::string holder = n > 0 ? std::string(who, std::size_t(n)) : std::string("another process");
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == '\0')) holder.pop_back();
    if (holder != holder_) spdlog::warn("xet cache {}: standing by, {} stewards it", root, holder);
    holder_ = holder;
    return false;
  }
  const std::string me = "pid " + std::to_string(::getpid()) + " on " + lock_host_name() + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, me.data(), me.size(), 0) != ssize_t(me.size()))
    spdlog::debug("xet cache {}: could not write who holds the lock: {}", root, std::strerror(errno));
  held_ = true;
  holder_.clear();
  return true;
}

}  // namespace dedupd::daemon::xetcache
