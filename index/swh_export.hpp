// The raw part of the index as a Software Heritage read shard (swh/): one
// object per raw chunk hash, the key its 32 bytes as stored in Xet shards,
// the value every location it has (swh/location.hpp's record). Keyed xorb
// forms are left out: their stored hashes are keyed with someone's key.
//
// Memory: the walk holds one hash group at a time (index/export.hpp); the
// SWH writer streams objects to the file and keeps 40 bytes per key for
// cmph and the index. Nothing else grows with the index.
#pragma once

#include <cstdint>
#include <string>

#include "index/index.hpp"
#include "swh/write_shard.hpp"

namespace dedupd::index {

struct SwhExport {
  std::uint64_t keys = 0;           // raw chunk hashes written
  std::uint64_t locations = 0;      // location records in them
  std::uint64_t keyed_entries = 0;  // chunk entries left out (keyed forms)
  std::uint64_t file_bytes = 0;
  swh::Header header{};
};

// Writes `path` atomically (temporary file, fsync, rename). Rules: the
// index's own on a read failure; swh.empty when there is no raw chunk at all
// (cmph cannot build a function over zero keys); the writer's swh.* rules.
Result<SwhExport> export_swh_shard(const Index& index, const std::string& path);

inline constexpr const char* kRuleSwhEmpty = "swh.empty";

}  // namespace dedupd::index
