// Chunks a stream as xet-core does and hashes each chunk (BLAKE3 keyed with
// DATA_KEY, shard::chunk_hash_of_data) while the bytes pass, so no chunk is
// ever copied or held: pieces of any size in, chunk records out, and the
// Xet file hash of the whole stream at the end.
#pragma once

#include <blake3.h>

#include <cstdint>
#include <span>
#include <vector>

#include "chunk/chunker.hpp"
#include "chunk/file_hash_builder.hpp"
#include "shard/hash.hpp"

namespace dedupd::chunk {

struct ChunkRecord {
  shard::Hash hash;      // raw chunk hash, as shards store it unkeyed
  std::uint64_t offset;  // of the chunk's first byte in the stream
  std::uint64_t size;
};

class ChunkHasher {
 public:
  ChunkHasher();

  // Feeds the next piece of the stream. Every chunk that ends inside it is
  // appended to `out` (which is not cleared).
  void update(std::span<const std::uint8_t> piece, std::vector<ChunkRecord>& out);

  // Ends the stream, appends its last chunk (if any) and returns the file
  // hash. The hasher is then ready for a new stream.
  shard::Hash finish(std::vector<ChunkRecord>& out);

  std::uint64_t bytes() const { return bytes_; }
  std::uint64_t chunks() const { return file_.chunks(); }

 private:
  void emit(std::uint64_t size, std::vector<ChunkRecord>& out);

  Chunker chunker_;
  blake3_hasher hasher_;
  FileHashBuilder file_;
  std::uint64_t bytes_ = 0;        // fed so far
  std::uint64_t chunk_start_ = 0;  // offset of the chunk in progress
};

}  // namespace dedupd::chunk
