#include "chunk/file_digest.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "chunk/sha256.hpp"

namespace dedupd::chunk {

namespace {

// Blocks pass from the reader (this thread, which also chunks them) to the
// sha256 thread in order; a block is refilled only after sha256 is done
// with it. Counters, not queues: block b lives in slot b % slots.
class Sha256Worker {
 public:
  Sha256Worker(std::vector<std::unique_ptr<std::uint8_t[]>>& slots, std::vector<std::size_t>& lengths)
      : slots_(slots), lengths_(lengths), thread_([this] { run(); }) {}
  ~Sha256Worker() { stop(); }

  // Waits until slot of block `b` is free to be filled.
  void wait_free(std::uint64_t b) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return done_ + slots_.size() > b; });
  }
  void post(std::uint64_t b, std::size_t length) {
    {
      std::lock_guard lock(mu_);
      lengths_[b % slots_.size()] = length;
      posted_ = b + 1;
    }
    cv_.notify_all();
  }
  // Ends the stream; returns the digest after every posted block.
  base::Result<shard::Hash> finish() {
    stop();
    return sha_.finish();
  }

 private:
  void stop() {
    {
      std::lock_guard lock(mu_);
      if (ended_) return;
      ended_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void run() {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return posted_ > done_ || ended_; });
      if (posted_ == done_) return;  // ended and drained
      const std::uint64_t b = done_;
      const std::size_t slot = b % slots_.size();
      lock.unlock();
      sha_.update(std::span(slots_[slot].get(), lengths_[slot]));
      lock.lock();
      done_ = b + 1;
      cv_.notify_all();
    }
  }

  std::vector<std::unique_ptr<std::uint8_t[]>>& slots_;
  std::vector<std::size_t>& lengths_;
  Sha256 sha_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::uint64_t posted_ = 0, done_ = 0;
  bool ended_ = false;
  std::thread thread_;  // last: starts after everything it uses exists
};

// Fills buf from fd until full or end of file; nullopt and errno on error.
std::optional<std::size_t> read_full(int fd, std::uint8_t* buf, std::size_t size) {
  std::size_t got = 0;
  while (got < size) {
    const ssize_t r = ::read(fd, buf + got, size - got);
    if (r < 0) {
      if (errno == EINTR) continue;
      return std::nullopt;
    }
    if (r == 0) break;
    got += std::size_t(r);
  }
  return got;
}

}  // namespace

base::Result<FileDigest> digest_fd(int fd, const DigestOptions& options) {
  const std::size_t block = std::max<std::size_t>(options.block_size, 4096);
  const std::size_t nslots = options.sha256 ? std::max<std::size_t>(options.blocks, 2) : 1;
  std::vector<std::unique_ptr<std::uint8_t[]>> slots;
  for (std::size_t i = 0; i < nslots; ++i) slots.emplace_back(new std::uint8_t[block]);
  std::vector<std::size_t> lengths(nslots, 0);
  std::optional<Sha256Worker> sha;
  if (options.sha256) sha.emplace(slots, lengths);

  ChunkHasher hasher;
  std::vector<ChunkRecord> records;
  FileDigest digest;
  for (std::uint64_t b = 0;; ++b) {
    if (sha) sha->wait_free(b);
    std::uint8_t* buf = slots[b % nslots].get();
    const auto got = read_full(fd, buf, block);
    if (!got) {
      const int e = errno;
      return base::Error{"read", hasher.bytes(), std::strerror(e)};
    }
    if (*got == 0) break;
    if (sha) sha->post(b, *got);
    records.clear();
    hasher.update(std::span(buf, *got), records);
    digest.chunks += records.size();
    if (options.on_chunks && !records.empty()) options.on_chunks(records);
    if (options.on_progress) options.on_progress(hasher.bytes());
    if (*got < block) break;
  }
  digest.size = hasher.bytes();
  records.clear();
  digest.file_hash = hasher.finish(records);
  digest.chunks += records.size();
  if (options.on_chunks && !records.empty()) options.on_chunks(records);
  if (sha) {
    auto s = sha->finish();
    if (!s) return s.error();
    digest.sha256 = *s;
  }
  return digest;
}

base::Result<FileDigest> digest_file(const std::string& path, const DigestOptions& options) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return base::Error{"open", 0, std::strerror(errno)};
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  auto r = digest_fd(fd, options);
  ::close(fd);
  return r;
}

}  // namespace dedupd::chunk
