#include "daemon/api/routes/lookup_params.hpp"

#include <fmt/format.h>

#include <array>
#include <utility>

#include "api/routes.hpp"

namespace dedupd::daemon::api::routes {

bool local_only(const http::Request& req) {
  auto v = req.query_value(::dedupd::api::kLocalOnly);
  return v && (v->empty() || *v == "1" || *v == "true" || *v == "yes");
}

namespace {

constexpr std::array<std::pair<std::string_view, std::uint8_t>, 8> kLocationFields{{
    {"xorb", render::LookupFields::kXorb},
    {"chunk_index", render::LookupFields::kChunkIndex},
    {"byte_start", render::LookupFields::kByteStart},
    {"byte_end", render::LookupFields::kByteEnd},
    {"unpacked_bytes", render::LookupFields::kUnpackedBytes},
    {"flags", render::LookupFields::kFlags},
    {"shards", render::LookupFields::kShards},
    {"origin", render::LookupFields::kOrigin},
}};

}  // namespace

std::variant<render::LookupFields, std::string> parse_lookup_fields(std::string_view list) {
  render::LookupFields f;
  f.hash = f.found = false;
  f.location = 0;
  while (!list.empty()) {
    std::size_t comma = list.find(',');
    std::string_view name = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    if (name.empty()) continue;
    if (name == "hash") {
      f.hash = true;
    } else if (name == "found") {
      f.found = true;
    } else if (name == "locations") {
      f.location = render::LookupFields::kAll;
    } else {
      bool known = false;
      for (const auto& [n, bit] : kLocationFields)
        if (n == name) {
          f.location |= bit;
          known = true;
        }
      if (!known)
        return fmt::format(
            "unknown field '{}' in fields: choose from hash, found, locations, xorb, chunk_index, byte_start, "
            "byte_end, unpacked_bytes, flags, shards, origin",
            name.substr(0, 40));
    }
  }
  if (!f.hash && !f.found && !f.location) return std::string("fields names none: give at least one");
  return f;
}

}  // namespace dedupd::daemon::api::routes
