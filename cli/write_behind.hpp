// Writing a large answer to a file without pushing the index out of memory.
// `dedupctl query -` over tens of millions of hashes writes gigabytes (about
// 400 B a result as JSON lines); left to the page cache, those pages evict
// the index's on a host whose RAM the index nearly fills, and every lookup
// after that reads the disk. So, like dd's oflag=nocache, once the output has
// grown past kKeepBytes the client starts the write-back of each window it
// completes and, one window later, drops that one from the page cache after
// it is on disk. An answer smaller than kKeepBytes stays cached whole.
//
// Advice only: a descriptor that is not a regular file (a pipe, a tty), or a
// file system that refuses, is left alone, and nothing here fails the verb.
#pragma once

#include <cstdint>

namespace dedupctl {

class WriteBehind {
 public:
  static constexpr std::uint64_t kWindowBytes = 16ull << 20;
  static constexpr std::uint64_t kKeepBytes = 4 * kWindowBytes;

  // `fd` is where the output goes (-1: nowhere known, as in the unit tests'
  // string streams). Its offset now is where this output starts.
  explicit WriteBehind(int fd);

  // Called after the output was flushed to the descriptor.
  void wrote();

  // Whether the output is a regular file this writes behind.
  bool active() const { return fd_ >= 0; }

  // Bytes handed to the disk and then dropped from the page cache so far.
  std::uint64_t dropped() const { return dropped_ - start_; }

 private:
  int fd_ = -1;
  std::uint64_t start_ = 0;    // the file offset the output began at
  std::uint64_t started_ = 0;  // write-back started up to here
  std::uint64_t dropped_ = 0;  // dropped from the page cache up to here
};

}  // namespace dedupctl
