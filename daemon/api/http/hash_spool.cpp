#include "daemon/api/http/hash_spool.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace dedupd::daemon::api::http {

namespace {

// A file nobody else can open and that disappears with its descriptor.
int temporary_file(const std::string& dir, std::string& error) {
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  // O_TMPFILE is missing on some file systems: a named file, unlinked at once.
  std::string path = dir + "/dedupd-batch-XXXXXX";
  fd = ::mkostemp(path.data(), O_CLOEXEC);
  if (fd < 0) {
    error = fmt::format("cannot create a temporary file in {} for the batch: {}", dir, std::strerror(errno));
    return -1;
  }
  ::unlink(path.c_str());
  return fd;
}

bool write_all(int fd, const void* data, std::size_t n, std::uint64_t at) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::pwrite(fd, p, n, off_t(at));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    at += std::uint64_t(w);
    n -= std::size_t(w);
  }
  return true;
}

}  // namespace

HashSpool::HashSpool(std::string dir) : dir_(std::move(dir)) {
  if (dir_.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    dir_ = tmp && *tmp ? tmp : "/tmp";
  }
  block_.reserve(kBlockHashes);
}

HashSpool::~HashSpool() {
  if (fd_ >= 0) ::close(fd_);
}

bool HashSpool::flush() {
  if (block_.empty()) return true;
  if (fd_ < 0 && (fd_ = temporary_file(dir_, error_)) < 0) return false;
  if (!write_all(fd_, block_.data(), block_.size() * sizeof(shard::Hash), in_file_ * sizeof(shard::Hash))) {
    error_ = fmt::format("cannot write the batch to a temporary file in {}: {}", dir_,
                         errno ? std::strerror(errno) : "short write");
    return false;
  }
  in_file_ += block_.size();
  block_.clear();
  return true;
}

bool HashSpool::put(const shard::Hash& hash) {
  if (block_.size() == kBlockHashes && !flush()) return false;
  block_.push_back(hash);
  ++count_;
  return true;
}

base::Result<std::span<const shard::Hash>> HashSpool::next() {
  if (!reading_) {
    reading_ = true;
    // Spilled already: the rest joins the file so reading has one source.
    if (fd_ >= 0 && !flush()) return base::Error{"api.spool", 0, error_};
    if (fd_ < 0) {
      read_ = count_;
      return std::span<const shard::Hash>(block_);
    }
  }
  if (fd_ < 0 || read_ == count_) return std::span<const shard::Hash>();
  const std::size_t n = std::size_t(std::min<std::uint64_t>(kBlockHashes, count_ - read_));
  block_.resize(n);
  char* p = reinterpret_cast<char*>(block_.data());
  std::size_t want = n * sizeof(shard::Hash);
  std::uint64_t at = read_ * sizeof(shard::Hash);
  while (want > 0) {
    ssize_t r = ::pread(fd_, p, want, off_t(at));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      return base::Error{"api.spool", at,
                         fmt::format("cannot read the batch back: {}", r < 0 ? std::strerror(errno) : "short file")};
    p += r;
    at += std::uint64_t(r);
    want -= std::size_t(r);
  }
  read_ += n;
  return std::span<const shard::Hash>(block_);
}

}  // namespace dedupd::daemon::api::http
