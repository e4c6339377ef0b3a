// BLAKE3 keyed hashing and the Xet hash constructions built on it: chunk
// hashes, merkle nodes (xorb and file hashes), verification range hashes and
// the shard file hash. Xet calls the keyed chunk hash "HMAC"; it is BLAKE3.
#pragma once

#include <cstdint>
#include <span>
#include <utility>

#include "shard/hash.hpp"

namespace dedupd::shard {

using Key = Hash;  // 32 raw key bytes

extern const Key kDataKey;          // chunk hashes and the shard file hash
extern const Key kInternalNodeKey;  // merkle nodes of xorbs and files
extern const Key kVerificationKey;  // FileVerificationEntry range hashes

Hash blake3_keyed(const Key& key, std::span<const std::uint8_t> message);

// The hash a keyed shard stores for a raw chunk hash. A zero key stores raw.
Hash keyed_chunk_hash(const Key& key, const Hash& raw);

// keyed_chunk_hash for many raw hashes under one key, as a lookup does for
// every query and live key. A 32-byte message is a single BLAKE3 block that
// is its chunk's first and last and the root, so its hash is one compression
// of the key words: the key is expanded once here, and each hash skips the
// hasher's set-up and buffering.
class KeyedChunkHasher {
 public:
  explicit KeyedChunkHasher(const Key& key);
  Hash operator()(const Hash& raw) const;
  // out[i] = (*this)(raw[i]), many at once (keyed_many.cpp): several times
  // faster per hash on a block of them.
  void hash_many(std::span<const Hash> raw, Hash* out) const;
  const Key& key() const { return key_; }

 private:
  Key key_;
  std::uint32_t key_words_[8];
};

// Hash of a chunk's bytes (what a client computes before any lookup).
Hash chunk_hash_of_data(std::span<const std::uint8_t> data);

// Hash of a whole shard file, the name it carries on disk (<hash>.mdb).
Hash shard_file_hash(std::span<const std::uint8_t> file_bytes);

struct HashAndSize {
  Hash hash;
  std::uint64_t size;
};

// Merkle root of (hash, size) leaves under the Xet aggregation rule.
// Empty input gives the zero hash.
Hash aggregated_node_hash(std::span<const HashAndSize> leaves);

// Xorb hash from its chunks in order. A one-chunk xorb hashes to its chunk.
inline Hash xorb_hash(std::span<const HashAndSize> chunks) { return aggregated_node_hash(chunks); }

// File hash from its chunks in order; the empty file has the zero hash.
Hash file_hash(std::span<const HashAndSize> chunks);

// FileVerificationEntry::range_hash of the raw chunk hashes a term covers.
Hash verification_range_hash(std::span<const Hash> raw_chunk_hashes);

}  // namespace dedupd::shard
