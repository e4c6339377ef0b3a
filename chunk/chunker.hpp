// xet-core's content-defined chunker as a streaming boundary finder: feed
// the bytes in pieces of any size, get back where each chunk ends. It never
// holds data, only the rolling hash and the length of the chunk in progress,
// and cuts exactly where xet-core does however the input is split.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace dedupd::chunk {

class Chunker {
 public:
  // Scans `data`, which follows everything fed so far. Returns the offset in
  // `data` just past the next boundary (the chunk in progress ends there and
  // a new one starts), or nullopt when `data` holds none: all of it belongs
  // to the chunk in progress. Call again with the rest after a boundary.
  std::optional<std::size_t> next_boundary(std::span<const std::uint8_t> data);

  // Ends the input: the length of the final chunk (0 when the input was
  // empty or ended on a boundary). The chunker is then ready for a new input.
  std::uint64_t finish();

  // Bytes of the chunk in progress fed so far.
  std::uint64_t pending() const { return pending_; }

 private:
  std::uint64_t hash_ = 0;
  std::uint64_t pending_ = 0;
};

// The chunk lengths of one whole input, in order (tests, small inputs).
std::vector<std::uint64_t> chunk_lengths(std::span<const std::uint8_t> data);

}  // namespace dedupd::chunk
