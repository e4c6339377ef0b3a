// The MDB shard layout, exact to the byte, as real Xet shards carry it (see
// docs/FORMAT.md). Every record is 48 bytes except the 200-byte footer and the
// lookup tables. Structs here are decoded values, not overlays: decoding
// copies out of the mapped bytes, so alignment never matters.
#pragma once

#include <array>
#include <cstdint>

#include "shard/bytes.hpp"
#include "shard/hash.hpp"

namespace dedupd::shard {

inline constexpr std::array<std::uint8_t, 32> kHeaderTag = {72, 70,  82,  101, 112, 111, 77,  101, 116, 97,  68,
                                                            97, 116, 97,  0,   85,  105, 103, 69,  106, 123, 129,
                                                            87, 131, 165, 189, 217, 92,  205, 209, 74,  169};
inline constexpr std::uint64_t kHeaderVersion = 2;
inline constexpr std::uint64_t kFooterVersion = 1;
inline constexpr std::uint64_t kEntrySize = 48;
inline constexpr std::uint64_t kHeaderSize = 48;
inline constexpr std::uint64_t kFooterSize = 200;
inline constexpr std::uint64_t kFileLookupEntrySize = 12;
inline constexpr std::uint64_t kXorbLookupEntrySize = 12;
inline constexpr std::uint64_t kChunkLookupEntrySize = 16;

inline constexpr std::uint32_t kFileFlagWithVerification = 1u << 31;
inline constexpr std::uint32_t kFileFlagWithMetadataExt = 1u << 30;
inline constexpr std::uint32_t kChunkFlagGlobalDedupEligible = 1u << 31;
inline constexpr std::uint64_t kNoExpiry = UINT64_MAX;

// True for the 48-byte section terminator: 32 x 0xFF then 16 x 0x00.
bool is_bookend(const std::uint8_t* entry);
void write_bookend(std::uint8_t* entry);

struct ShardHeader {
  std::uint64_t version = kHeaderVersion;
  std::uint64_t footer_size = kFooterSize;
};

struct ShardFooter {
  std::uint64_t version = kFooterVersion;
  std::uint64_t file_info_offset = 0;
  std::uint64_t cas_info_offset = 0;
  std::uint64_t file_lookup_offset = 0;
  std::uint64_t file_lookup_num_entry = 0;
  std::uint64_t xorb_lookup_offset = 0;
  std::uint64_t xorb_lookup_num_entry = 0;
  std::uint64_t chunk_lookup_offset = 0;
  std::uint64_t chunk_lookup_num_entry = 0;
  Hash chunk_hash_key;  // "chunk_hash_hmac_key"; zero = hashes stored raw
  std::uint64_t creation_timestamp = 0;
  std::uint64_t key_expiry = kNoExpiry;  // 0 also means "no expiry" (unset)
  std::array<std::uint64_t, 6> reserved{};
  std::uint64_t stored_bytes_on_disk = 0;
  std::uint64_t materialized_bytes = 0;
  std::uint64_t stored_bytes = 0;
  std::uint64_t footer_offset = 0;

  bool keyed() const { return !chunk_hash_key.is_zero(); }
  bool expires() const { return key_expiry != 0 && key_expiry != kNoExpiry; }
  bool expired_at(std::uint64_t now) const { return expires() && now >= key_expiry; }

  static ShardFooter decode(const std::uint8_t* p);
  void encode(std::uint8_t* p) const;
};

struct FileHeader {
  Hash file_hash;
  std::uint32_t flags = 0;
  std::uint32_t num_entries = 0;
  std::uint64_t unused = 0;

  bool with_verification() const { return flags & kFileFlagWithVerification; }
  bool with_metadata_ext() const { return flags & kFileFlagWithMetadataExt; }
  static FileHeader decode(const std::uint8_t* p);
  void encode(std::uint8_t* p) const;
};

// One reconstruction term: chunks [chunk_start, chunk_end) of a xorb.
struct FileTerm {
  Hash xorb_hash;
  std::uint32_t flags = 0;
  std::uint32_t unpacked_bytes = 0;
  std::uint32_t chunk_start = 0;
  std::uint32_t chunk_end = 0;
  static FileTerm decode(const std::uint8_t* p);
  void encode(std::uint8_t* p) const;
};

// FileVerificationEntry and FileMetadataExt share a layout: hash + 16 bytes.
struct HashRecord {
  Hash hash;
  std::array<std::uint8_t, 16> unused{};
  static HashRecord decode(const std::uint8_t* p);
  void encode(std::uint8_t* p) const;
};

struct XorbHeader {
  Hash xorb_hash;
  std::uint32_t flags = 0;
  std::uint32_t num_entries = 0;
  std::uint32_t bytes_in_xorb = 0;  // num_bytes_in_cas: unpacked total
  std::uint32_t bytes_on_disk = 0;
  static XorbHeader decode(const std::uint8_t* p);
  void encode(std::uint8_t* p) const;
};

struct ChunkEntry {
  Hash chunk_hash;               // keyed when the shard is keyed
  std::uint32_t byte_start = 0;  // chunk_byte_range_start within the xorb
  std::uint32_t unpacked_bytes = 0;
  std::uint32_t flags = 0;
  std::uint32_t unused = 0;

  bool global_dedup_eligible() const { return flags & kChunkFlagGlobalDedupEligible; }
  static ChunkEntry decode(const std::uint8_t* p);
  void encode(std::uint8_t* p) const;
};

// Lookup tables between the CAS bookend and the footer (client-written).
struct LookupEntry {  // file and xorb tables
  std::uint64_t truncated;
  std::uint32_t index;  // 48-byte entries from the start of the section
};
struct ChunkLookupEntry {
  std::uint64_t truncated;
  std::uint32_t xorb_index;
  std::uint32_t chunk_offset;
};

}  // namespace dedupd::shard
