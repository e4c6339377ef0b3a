// The chunk table's range partitions: what the migrations that create the
// table and the Reader that routes its probes must agree on.
#pragma once

#include <cstdint>
#include <string>

namespace dedupd::fleet::schema {

// The chunk table is range-partitioned on its 8-byte hash prefix into this
// many equal ranges (the top 4 bits). The prefix is uniform (a hash), so the
// ranges are even; the client routes each key to its range (partition_of),
// so a lookup gives each partition only its own keys, as a sharded
// PostgreSQL routes by distribution column. See docs/FLEET.md.
inline constexpr int kChunkPartitions = 16;
inline int partition_of(std::int64_t prefix) { return int((std::uint64_t(prefix) ^ (1ull << 63)) >> 60); }
// Inclusive lower bound of partition i as SQL text ("MINVALUE" for 0).
std::string partition_lower(int i);
std::string partition_upper(int i);

}  // namespace dedupd::fleet::schema
