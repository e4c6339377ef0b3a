#include "daemon/api/render/lookup_fields.hpp"

#include <string_view>

#include "daemon/api/render/fleet_json.hpp"
#include "daemon/api/render/json_shapes.hpp"

namespace dedupd::daemon::api::render {

namespace {

// One location with the chosen fields; `shards` writes its shard list.
template <class Location, class WriteShards>
void write_location_fields(JsonOut& out, std::uint8_t want, const Location& loc, const char* origin,
                           WriteShards&& shards) {
  out.ch('{');
  bool first_field = true;
  auto field = [&](std::string_view name) -> JsonOut& {
    if (!first_field) out.ch(',');
    first_field = false;
    return out.key(name);
  };
  if (want & LookupFields::kXorb) field("xorb").hash(loc.xorb);
  if (want & LookupFields::kChunkIndex) field("chunk_index").num(loc.chunk_index);
  if (want & LookupFields::kByteStart) field("byte_start").num(loc.byte_start);
  if (want & LookupFields::kByteEnd) field("byte_end").num(loc.byte_end);
  if (want & LookupFields::kUnpackedBytes) field("unpacked_bytes").num(loc.unpacked_bytes);
  if (want & LookupFields::kFlags) field("flags").num(loc.flags);
  if (want & LookupFields::kOrigin) field("origin").ch('"').raw(origin).ch('"');
  if (want & LookupFields::kShards) shards(field("shards"));
  out.ch('}');
}

}  // namespace

void write_lookup_result(JsonOut& out, const LookupFields& fields, const shard::Hash& hash,
                         std::span<const index::BatchLocation> locations, const index::BatchResult& result,
                         const FleetPart* fleet) {
  std::span<const fleet::ChunkLocation> remote;
  if (fleet) remote = fleet->misses.of(fleet->query);
  out.ch('{');
  bool first = true;
  auto sep = [&] {
    if (!first) out.ch(',');
    first = false;
  };
  if (fields.hash) {
    sep();
    out.key("hash").hash(hash);
  }
  if (fields.found) {
    sep();
    out.key("found").boolean(!locations.empty() || !remote.empty());
  }
  if (fields.location) {
    sep();
    out.key("locations").ch('[');
    const std::uint8_t want = fields.location;
    for (std::size_t j = 0; j < locations.size(); ++j) {
      if (j) out.ch(',');
      write_location_fields(out, want, locations[j], "local",
                            [&](JsonOut& o) { write_shard_refs(o, result.shards(locations[j])); });
    }
    for (std::size_t j = 0; j < remote.size(); ++j) {
      if (j || !locations.empty()) out.ch(',');
      write_location_fields(out, want, remote[j], "fleet", [&](JsonOut& o) {
        write_fleet_shard_refs(o, remote[j], fleet->misses.answers.shards(remote[j]));
      });
    }
    out.ch(']');
  }
  out.ch('}');
}

}  // namespace dedupd::daemon::api::render
