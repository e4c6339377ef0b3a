// The sizes of xet-core's content-defined chunking. Facts from
// huggingface/xet-core: xet_core_structures/src/xorb_object/constants.rs
// (TARGET_CHUNK_SIZE 64 KiB, MINIMUM_CHUNK_DIVISOR 8, MAXIMUM_CHUNK_MULTIPLIER
// 2) and xet_data/src/deduplication/chunking.rs (the mask, the 64-byte hash
// window and the skip at the start of each chunk).
#pragma once

#include <cstddef>
#include <cstdint>

namespace dedupd::chunk {

inline constexpr std::size_t kTargetChunkSize = 64 * 1024;
inline constexpr std::size_t kMinChunkSize = kTargetChunkSize / 8;  // 8 KiB
inline constexpr std::size_t kMaxChunkSize = kTargetChunkSize * 2;  // 128 KiB

// A boundary follows a byte after which the rolling hash has these bits all
// zero: target - 1 shifted to the top of the word, because the low bits of
// a gear hash depend on only the last few bytes.
inline constexpr std::uint64_t kBoundaryMask = std::uint64_t(kTargetChunkSize - 1) << 48;
static_assert(kBoundaryMask == 0xFFFF'0000'0000'0000ull);

// Bytes that still influence the gear hash (each step shifts it left by one).
inline constexpr std::size_t kHashWindow = 64;

// xet-core does not feed the first min - window - 1 bytes of a chunk to the
// hash at all (it starts from zero after each boundary), and takes no
// boundary before the minimum size even when the hash matches (xet-core PR
// #487). So the hash at any allowed boundary depends on the chunk's own bytes
// only, and the same bytes cut the same way however the input is split.
inline constexpr std::size_t kHashStart = kMinChunkSize - kHashWindow - 1;  // 8,127

}  // namespace dedupd::chunk
