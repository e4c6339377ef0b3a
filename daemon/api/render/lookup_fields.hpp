// Which fields a chunk lookup answer carries (POST /v1/chunk?fields=...,
// read by routes/lookup_params), and the writer of one result with them. A
// presence check asks for hash,found and gets no locations; the writer
// appends straight to the answer's buffer (no document per hash, no
// allocation once it has grown).
#pragma once

#include <cstdint>
#include <span>

#include "daemon/answers/fleet_misses.hpp"
#include "daemon/api/render/json_out.hpp"
#include "index/types.hpp"

namespace dedupd::daemon::api::render {

struct LookupFields {
  enum Location : std::uint8_t {
    kXorb = 1,
    kChunkIndex = 2,
    kByteStart = 4,
    kByteEnd = 8,
    kUnpackedBytes = 16,
    kFlags = 32,
    kShards = 64,
    kOrigin = 128,
    kAll = 255,
  };
  bool hash = true;
  bool found = true;
  std::uint8_t location = kAll;  // 0: no "locations" at all
};

// What the fleet answered for the local misses of one block of hashes;
// `query` is the hash's index in that block.
struct FleetPart {
  const answers::FleetMisses& misses;
  std::uint32_t query;
};

// {"hash": ..., "found": ..., "locations": [...]} with the chosen fields:
// the local locations first ("origin": "local"), then the fleet's.
void write_lookup_result(JsonOut& out, const LookupFields& fields, const shard::Hash& hash,
                         std::span<const index::BatchLocation> locations, const index::BatchResult& result,
                         const FleetPart* fleet = nullptr);

}  // namespace dedupd::daemon::api::render
