// Everything a shard must pass before the index sees it: the structure
// (ShardView::parse, every offset and count) and the integrity checks that
// hold for it (xorb hashes, verification entries, term sizes, lookup tables,
// and the file name when it is "<hash>.mdb").
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "base/result.hpp"
#include "shard/reader.hpp"

namespace dedupd::daemon::ingest {

struct ValidShard {
  shard::ShardView view;
  // The content hash when the file name was checked against it; lets the
  // index skip hashing the bytes a second time.
  std::optional<shard::Hash> content_hash;
};

// `name` is the file path or upload name (only its last component matters).
base::Result<ValidShard> validate_shard(std::span<const std::uint8_t> bytes, std::string_view name);

}  // namespace dedupd::daemon::ingest
