#include "chunk/chunk_hasher.hpp"

#include "shard/keys.hpp"

namespace dedupd::chunk {

ChunkHasher::ChunkHasher() { blake3_hasher_init_keyed(&hasher_, shard::kDataKey.bytes.data()); }

void ChunkHasher::emit(std::uint64_t size, std::vector<ChunkRecord>& out) {
  ChunkRecord r{{}, chunk_start_, size};
  blake3_hasher_finalize(&hasher_, r.hash.bytes.data(), r.hash.bytes.size());
  blake3_hasher_reset(&hasher_);
  file_.add(r.hash, size);
  chunk_start_ += size;
  out.push_back(r);
}

void ChunkHasher::update(std::span<const std::uint8_t> piece, std::vector<ChunkRecord>& out) {
  bytes_ += piece.size();
  while (!piece.empty()) {
    const std::uint64_t before = chunker_.pending();
    const auto cut = chunker_.next_boundary(piece);
    const std::size_t take = cut ? *cut : piece.size();
    blake3_hasher_update(&hasher_, piece.data(), take);
    if (!cut) return;
    emit(before + take, out);
    piece = piece.subspan(take);
  }
}

shard::Hash ChunkHasher::finish(std::vector<ChunkRecord>& out) {
  if (const std::uint64_t last = chunker_.finish()) emit(last, out);
  blake3_hasher_reset(&hasher_);
  bytes_ = 0;
  chunk_start_ = 0;
  return file_.finish();
}

}  // namespace dedupd::chunk
