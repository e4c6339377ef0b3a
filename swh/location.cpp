#include "swh/location.hpp"

#include <string>

namespace dedupd::swh {
namespace {

void put_be32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  for (int i = 3; i >= 0; --i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
std::uint32_t get_be32(const std::uint8_t* p) {
  return std::uint32_t(p[0]) << 24 | std::uint32_t(p[1]) << 16 | std::uint32_t(p[2]) << 8 | p[3];
}

}  // namespace

std::vector<std::uint8_t> encode_locations(std::span<const Location> locations) {
  std::vector<std::uint8_t> out;
  out.reserve(4 + kLocationSize * locations.size());
  put_be32(out, static_cast<std::uint32_t>(locations.size()));
  for (const Location& l : locations) {
    out.insert(out.end(), l.xorb.bytes.begin(), l.xorb.bytes.end());
    put_be32(out, l.chunk_index);
    put_be32(out, l.byte_start);
    put_be32(out, l.byte_end);
    put_be32(out, l.unpacked_size);
  }
  return out;
}

base::Result<std::vector<Location>> decode_locations(std::span<const std::uint8_t> object) {
  if (object.size() < 4) {
    return base::Error{"location.size", 0, "location record shorter than its count"};
  }
  const std::uint32_t count = get_be32(object.data());
  if (count == 0) return base::Error{"location.count", 0, "location record with no location"};
  if ((object.size() - 4) % kLocationSize != 0 || (object.size() - 4) / kLocationSize != count) {
    return base::Error{"location.size", 0,
                       "record of " + std::to_string(object.size()) + " bytes for " + std::to_string(count) +
                           " locations (needs " + std::to_string(4 + kLocationSize * std::uint64_t(count)) + ")"};
  }
  std::vector<Location> out(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::uint8_t* p = object.data() + 4 + kLocationSize * i;
    Location& l = out[i];
    l.xorb = shard::Hash::from_bytes({p, 32});
    l.chunk_index = get_be32(p + 32);
    l.byte_start = get_be32(p + 36);
    l.byte_end = get_be32(p + 40);
    l.unpacked_size = get_be32(p + 44);
    if (l.byte_start > l.byte_end) {
      return base::Error{"location.range", 4 + kLocationSize * i + 36,
                         "byte start after byte end in location " + std::to_string(i)};
    }
  }
  return out;
}

}  // namespace dedupd::swh
