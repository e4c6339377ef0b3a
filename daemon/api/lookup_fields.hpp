// Which fields a chunk lookup answer carries (POST /v1/chunk?fields=...), and
// the writer of one result with them. A presence check asks for
// hash,found and gets no locations; the writer appends straight to the
// answer's buffer (no document per hash, no allocation once it has grown).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "daemon/api/json_out.hpp"
#include "daemon/fleet/answers.hpp"
#include "index/types.hpp"

namespace dedupd::daemon::http {

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

  // "hash,found,xorb,..." (docs/API.md); a message for a 400 otherwise.
  static std::variant<LookupFields, std::string> parse(std::string_view list);
};

// What the fleet answered for the local misses of one block of hashes;
// `query` is the hash's index in that block.
struct FleetPart {
  const fleet_link::FleetMisses& misses;
  std::uint32_t query;
};

// The "shards" lists of one BatchResult as written, by shard set. The
// chunks of a xorb share one set and a batch meets few sets, so a streamed
// answer writes each list once and copies it after; clear() with every new
// BatchResult (the text keeps its capacity).
class ShardListText {
 public:
  void clear() {
    for (std::size_t i = 0; i < used_; ++i) text_[i].clear();
    used_ = 0;
  }
  // The text of set `set` of `result`, written on first use.
  std::string_view of(const index::BatchResult& result, std::uint32_t set);

 private:
  std::vector<std::string> text_;
  std::size_t used_ = 0;  // text_[0, used_) may hold text
};

// {"hash": ..., "found": ..., "locations": [...]} with the chosen fields:
// the local locations first ("origin": "local"), then the fleet's. With
// `lists`, shard lists come from (and go into) it.
void write_lookup_result(JsonOut& out, const LookupFields& fields, const shard::Hash& hash,
                         std::span<const index::BatchLocation> locations, const index::BatchResult& result,
                         const FleetPart* fleet = nullptr, ShardListText* lists = nullptr);

}  // namespace dedupd::daemon::http
