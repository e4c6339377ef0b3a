#include "fleet/partitions.hpp"

namespace dedupd::fleet::schema {

std::string partition_lower(int i) {
  if (i == 0) return "MINVALUE";
  return std::to_string(std::int64_t((std::uint64_t(i) << 60) ^ (1ull << 63)));
}

std::string partition_upper(int i) {
  if (i == kChunkPartitions - 1) return "MAXVALUE";
  return partition_lower(i + 1);
}

}  // namespace dedupd::fleet::schema
