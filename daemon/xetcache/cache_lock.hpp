// One steward per cache: a lock file in each managed root, held (flock,
// exclusive) by the one dedupd stewarding it, which says who that is. A
// second dedupd (another instance, another host on NFS) stands by.
#pragma once

#include <filesystem>
#include <string>

namespace dedupd::daemon::xetcache {

class CacheLock {
 public:
  CacheLock() = default;
  ~CacheLock();
  CacheLock(const CacheLock&) = delete;
  CacheLock& operator=(const CacheLock&) = delete;

  // True when this process holds the lock of `root` (now or already); else
  // holder() says who does, or why the lock file cannot be had. The file
  // stays open either way, so a later call only tries the flock again.
  bool take(const std::filesystem::path& root);
  bool held() const { return held_; }
  const std::string& holder() const { return holder_; }

 private:
  int fd_ = -1;
  bool held_ = false;
  std::string holder_;
};

}  // namespace dedupd::daemon::xetcache
