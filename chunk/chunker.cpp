#include "chunk/chunker.hpp"

#include <algorithm>

#include "chunk/constants.hpp"
#include "chunk/gear_table.hpp"

namespace dedupd::chunk {

namespace {

// One gear step: the hash moves left by one bit and takes the byte's value.
inline std::uint64_t step(std::uint64_t h, std::uint8_t b) { return (h << 1) + kGearTable[b]; }

// Boundary test. The mask is the top 16 bits, so "all zero" is "below 2^48".
inline bool matches(std::uint64_t h) { return (h & kBoundaryMask) == 0; }

// Feeds p[0..n) and returns the index just past the first byte after which
// the hash matches, or n. The hash chain is the speed limit (a shift and an
// add per byte, each waiting for the last), so the loop advances it two bytes
// at a time: h2 = 4h + (2 T[b1] + T[b2]) has half the dependent steps, and
// the in-between value is computed beside the chain for its test.
std::size_t scan(std::uint64_t& hash, const std::uint8_t* p, std::size_t n) {
  std::uint64_t h = hash;
  std::size_t i = 0;
  for (; i + 2 <= n; i += 2) {
    const std::uint64_t t1 = kGearTable[p[i]];
    const std::uint64_t t2 = kGearTable[p[i + 1]];
    const std::uint64_t h1 = (h << 1) + t1;
    const std::uint64_t h2 = (h << 2) + ((t1 << 1) + t2);
    if (matches(h1) || matches(h2)) [[unlikely]] {
      if (matches(h1)) {
        hash = h1;
        return i + 1;
      }
      hash = h2;
      return i + 2;
    }
    h = h2;
  }
  for (; i < n; ++i) {
    h = step(h, p[i]);
    if (matches(h)) {
      hash = h;
      return i + 1;
    }
  }
  hash = h;
  return n;
}

}  // namespace

std::optional<std::size_t> Chunker::next_boundary(std::span<const std::uint8_t> data) {
  const std::size_t n = data.size();
  if (n == 0) return std::nullopt;
  const std::uint8_t* p = data.data();

  // Never past the maximum chunk size.
  const std::size_t limit = std::size_t(std::min<std::uint64_t>(n, kMaxChunkSize - pending_));
  std::size_t i = 0;
  // The first kHashStart bytes of a chunk are not hashed at all.
  if (pending_ < kHashStart) i = std::size_t(std::min<std::uint64_t>(kHashStart - pending_, limit));
  // Then the hash warms up on bytes where no boundary may be taken yet
  // (a chunk ending there would be under the minimum).
  const std::size_t first_allowed = pending_ + 1 >= kMinChunkSize ? 0 : std::size_t(kMinChunkSize - 1 - pending_);
  for (const std::size_t warm_end = std::min(first_allowed, limit); i < warm_end; ++i) hash_ = step(hash_, p[i]);

  if (i < limit) {
    const std::size_t end = i + scan(hash_, p + i, limit - i);
    if (end < limit || matches(hash_)) {
      hash_ = 0;
      pending_ = 0;
      return end;
    }
  }
  if (pending_ + limit == kMaxChunkSize) {
    hash_ = 0;
    pending_ = 0;
    return limit;
  }
  pending_ += n;
  return std::nullopt;
}

std::uint64_t Chunker::finish() {
  const std::uint64_t last = pending_;
  hash_ = 0;
  pending_ = 0;
  return last;
}

std::vector<std::uint64_t> chunk_lengths(std::span<const std::uint8_t> data) {
  std::vector<std::uint64_t> out;
  Chunker c;
  for (;;) {
    const std::uint64_t before = c.pending();
    auto b = c.next_boundary(data);
    if (!b) break;
    out.push_back(before + *b);
    data = data.subspan(*b);
  }
  if (std::uint64_t last = c.finish()) out.push_back(last);
  return out;
}

}  // namespace dedupd::chunk
