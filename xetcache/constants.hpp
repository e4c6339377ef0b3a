// What the Xet client (xet-core, behind hf_xet) does with its shard cache,
// as numbers. Each is xet-core's own default; the path says where it lives
// in the xet-core repository (read at commit af1a3ff9).
#pragma once

#include <cstdint>
#include <string_view>

namespace dedupd::xetcache {

// MDB_SHARD_TARGET_SIZE, xet_core_structures/src/metadata_shard/constants.rs:
// the client merges session shards up to this size; a merged shard here
// stays within it too, so nothing it loads is larger than what it writes.
inline constexpr std::uint64_t kXetShardTargetSize = 64ull * 1024 * 1024;

// HF_XET_SHARD_CHUNK_INDEX_TABLE_MAX_SIZE (chunk_index_table_max_size),
// xet_runtime/src/config/groups/shard.rs: past this many chunk entries the
// client registers further shards but does not index their chunks.
inline constexpr std::uint64_t kXetChunkIndexMaxEntries = 64ull * 1024 * 1024;

// HF_XET_SHARD_CACHE_SIZE_LIMIT (cache_size_limit, "16gb"),
// xet_runtime/src/config/groups/shard.rs; ByteSize parses "gb" as 10^9.
inline constexpr std::uint64_t kXetCacheSizeLimit = 16'000'000'000ull;

// MDB_SHARD_EXPIRATION_BUFFER, metadata_shard/constants.rs: the client
// deletes a shard this long after its expiry (at session start only).
inline constexpr std::uint64_t kXetExpirationBufferSeconds = 7 * 24 * 3600;

// Directory names: shard.cache_subdir (groups/shard.rs), data.staging_subdir
// (groups/data.rs), session.dir_name (groups/session.rs); the resumable
// xorb metadata sits beside the session directories
// (xet_data/src/processing/shard_interface/native.rs).
inline constexpr std::string_view kShardCacheDir = "shard-cache";
inline constexpr std::string_view kStagingDir = "staging";
inline constexpr std::string_view kShardSessionDir = "shard-session";
inline constexpr std::string_view kXorbMetadataDir = "xorb_metadata";

// The client's test for a loadable shard: now <= key_expiry
// (MDBShardFile::load_managed_directory, shard_file_handle.rs). So a shard is
// dead to it once now > expiry, and an expiry of 0 is already past; dedupd's
// own reader treats 0 as "never", but in this cache the client decides.
inline bool expired_for_client(std::uint64_t key_expiry, std::uint64_t now) { return now > key_expiry; }

}  // namespace dedupd::xetcache
