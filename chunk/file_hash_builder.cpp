#include "chunk/file_hash_builder.hpp"

#include <string>

namespace dedupd::chunk {

namespace {

// Xet's merkle grouping (shard/keys.cpp has the whole-list form, and
// FORMAT-NOTES the rule): a group ends after its element i >= 2 whose hash's
// last word is 0 mod 4, or after 9 elements; the tail of a level is one group.
constexpr std::size_t kMaxGroup = 9;

bool ends_group(const std::vector<shard::HashAndSize>& group) {
  return group.size() == kMaxGroup || (group.size() >= 3 && group.back().hash.word(3) % 4 == 0);
}

shard::HashAndSize merge(const std::vector<shard::HashAndSize>& group) {
  std::string text;
  text.reserve(group.size() * 90);
  std::uint64_t total = 0;
  for (const auto& m : group) {
    text += m.hash.to_string();
    text += " : ";
    text += std::to_string(m.size);
    text += '\n';
    total += m.size;
  }
  return {shard::blake3_keyed(shard::kInternalNodeKey,
                              std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size())),
          total};
}

}  // namespace

void FileHashBuilder::push(std::size_t level, const shard::HashAndSize& node) {
  if (levels_.size() <= level) levels_.resize(level + 1);
  Level& l = levels_[level];
  l.group.push_back(node);
  ++l.produced;
  if (ends_group(l.group)) {
    const shard::HashAndSize merged = merge(l.group);
    levels_[level].group.clear();
    push(level + 1, merged);
  }
}

void FileHashBuilder::add(const shard::Hash& chunk_hash, std::uint64_t size) {
  ++chunks_;
  push(0, {chunk_hash, size});
}

shard::Hash FileHashBuilder::finish() {
  shard::Hash root{};
  // Close each level's last group, lowest first; the root is the single node
  // of the first level that never received a second one and has none above.
  for (std::size_t level = 0; level < levels_.size(); ++level) {
    Level& l = levels_[level];
    const bool top = level + 1 == levels_.size();
    if (top && l.produced == 1) {
      root = l.group.front().hash;
      break;
    }
    if (!l.group.empty()) {
      const shard::HashAndSize merged = merge(l.group);
      l.group.clear();
      push(level + 1, merged);  // may add the level above
    }
  }
  const bool empty = chunks_ == 0;
  levels_.clear();
  chunks_ = 0;
  if (empty) return shard::Hash{};
  return shard::blake3_keyed(shard::Key{}, root.bytes);
}

}  // namespace dedupd::chunk
