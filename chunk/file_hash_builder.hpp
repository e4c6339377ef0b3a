// The Xet file hash of a chunk list built as the chunks arrive, in memory
// that grows with the log of the chunk count, not the count: each level of
// the merkle tree keeps only the nodes of its current, unfinished group.
// Gives what shard::file_hash gives for the whole list at once.
#pragma once

#include <cstdint>
#include <vector>

#include "shard/hash.hpp"
#include "shard/keys.hpp"

namespace dedupd::chunk {

class FileHashBuilder {
 public:
  void add(const shard::Hash& chunk_hash, std::uint64_t size);
  // The file hash of everything added (the zero hash when nothing was).
  // The builder is empty again afterwards.
  shard::Hash finish();
  std::uint64_t chunks() const { return chunks_; }

 private:
  struct Level {
    std::vector<shard::HashAndSize> group;  // nodes not yet merged, at most 9
    std::uint64_t produced = 0;             // nodes this level has received
  };
  void push(std::size_t level, const shard::HashAndSize& node);

  std::vector<Level> levels_;
  std::uint64_t chunks_ = 0;
};

}  // namespace dedupd::chunk
