// libFuzzer target: the chunker's streaming API. However a stream is split
// into pieces, it must be cut at the same boundaries with the same chunk
// hashes as in one piece, and every chunk but the last must be within the
// minimum and maximum sizes.
//
// Input: 8 bytes that choose the piece sizes, then a payload. Chunks are at
// least 8 KiB, far beyond a fuzz input, so the stream is the payload
// repeated (each copy xored with its index) up to 64 times and 512 KiB.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "chunk/chunk_hasher.hpp"
#include "chunk/constants.hpp"

namespace {

std::vector<dedupd::chunk::ChunkRecord> chunked(std::span<const std::uint8_t> stream, std::uint64_t split_seed) {
  dedupd::chunk::ChunkHasher h;
  std::vector<dedupd::chunk::ChunkRecord> out;
  std::uint64_t s = split_seed | 1;
  while (!stream.empty()) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    // Mostly tiny pieces, some around the chunk sizes, some empty.
    std::size_t n;
    switch (s % 4) {
      case 0:
        n = s % 4;
        break;
      case 1:
        n = (s >> 8) % 256;
        break;
      case 2:
        n = (s >> 8) % 20000;
        break;
      default:
        n = (s >> 8) % 300000;
        break;
    }
    n = std::min(n, stream.size());
    h.update(stream.first(n), out);
    stream = stream.subspan(n);
  }
  (void)h.finish(out);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 9) return 0;
  std::uint64_t split_seed;
  std::memcpy(&split_seed, data, 8);
  std::span<const std::uint8_t> payload(data + 8, size - 8);

  std::vector<std::uint8_t> stream;
  const std::size_t copies = std::min<std::size_t>(64, (1u << 19) / payload.size() + 1);
  for (std::size_t k = 0; k < copies; ++k)
    for (std::uint8_t b : payload) stream.push_back(std::uint8_t(b ^ k));

  const auto whole = chunked(stream, 0x9e3779b97f4a7c15ull);
  dedupd::chunk::ChunkHasher one;
  std::vector<dedupd::chunk::ChunkRecord> reference;
  one.update(stream, reference);
  (void)one.finish(reference);

  const auto split = chunked(stream, split_seed);
  if (split.size() != reference.size() || whole.size() != reference.size()) std::abort();
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < reference.size(); ++i) {
    const auto& r = reference[i];
    if (split[i].size != r.size || split[i].offset != r.offset || split[i].hash != r.hash) std::abort();
    if (whole[i].size != r.size || whole[i].hash != r.hash) std::abort();
    if (r.offset != total || r.size == 0 || r.size > dedupd::chunk::kMaxChunkSize) std::abort();
    if (i + 1 < reference.size() && r.size < dedupd::chunk::kMinChunkSize) std::abort();
    total += r.size;
  }
  if (total != stream.size()) std::abort();
  return 0;
}
