// One pass over a file gives everything a Xet client computes before an
// upload: the chunks (boundaries and hashes), the Xet file hash and the
// content sha256. The file is read in fixed blocks, so memory does not
// depend on its size; sha256 runs on a second thread over the same blocks
// while this one chunks and hashes them.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "base/result.hpp"
#include "chunk/chunk_hasher.hpp"
#include "shard/hash.hpp"

namespace dedupd::chunk {

struct FileDigest {
  std::uint64_t size = 0;
  std::uint64_t chunks = 0;
  shard::Hash file_hash;  // Xet file hash (zero for an empty file)
  shard::Hash sha256;     // byte order; zero when not asked for
};

struct DigestOptions {
  bool sha256 = true;
  std::size_t block_size = 4 << 20;  // bytes read at a time
  std::size_t blocks = 4;            // blocks in flight between the threads
  // Called on the calling thread with the chunks completed by each block
  // (and the last one at the end), in file order.
  std::function<void(std::span<const ChunkRecord>)> on_chunks;
  // Called on the calling thread after each block with the bytes done.
  std::function<void(std::uint64_t)> on_progress;
};

// Reads the whole file at `path` (a regular file, a pipe, anything read()
// works on). A read error is an Error with rule "read" (or "open") and the
// offset it happened at.
base::Result<FileDigest> digest_file(const std::string& path, const DigestOptions& options = {});

// The same over a file descriptor the caller owns (read to its end).
base::Result<FileDigest> digest_fd(int fd, const DigestOptions& options = {});

}  // namespace dedupd::chunk
