#include "index/chunk_filter.hpp"

#include <algorithm>

namespace dedupd::index {

ChunkFilter::ChunkFilter(std::uint64_t capacity)
    : capacity_(capacity),
      num_blocks_(std::max<std::size_t>(1, std::size_t(capacity * kBitsPerEntry / (8 * sizeof(Block))))),
      blocks_(std::make_unique<Block[]>(num_blocks_)) {}

}  // namespace dedupd::index
