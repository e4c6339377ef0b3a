// The fleet schema: versioned migrations kept here, applied in order inside
// one transaction under an advisory lock, recorded in dedupd.schema_version.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "fleet/connection.hpp"
#include "fleet/fleet.hpp"
#include "fleet/migrations.hpp"

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

// Where the schema stands (dedupd.schema_version). Since version 7 two
// numbers: the migrations applied, and the oldest schema a dedupd must know
// to use it (`version`, all 0.1.0 reads). An additive migration raises the
// first only, so older dedupd keep working during a rolling upgrade.
struct Version {
  std::uint32_t applied = 0;   // 0: no schema
  std::uint32_t required = 0;  // a dedupd knowing fewer migrations is refused
};
// Reads both on any schema (`applied` is NULL or missing before version 7).
inline constexpr const char* kVersionQuery =
    "SELECT version, (to_jsonb(v) ->> 'applied')::int4 FROM dedupd.schema_version v";
Result<Version> version_of(const detail::Rows& rows);
Result<Version> read_version(detail::Connection& c);
// Why this dedupd cannot use a schema (newer than it knows, or older than
// it needs), or nullopt.
std::optional<Error> unusable(const Version& found);
// Creates or upgrades; refuses a schema that needs a newer dedupd, naming
// both versions. A migration that is not additive past kLastAutomatic runs
// only with `final` (fleet.schema_final otherwise).
Result<MigrateOutcome> migrate(detail::Connection& c, bool final = false);
Result<MigrateOutcome> migrate(detail::Connection& c, const std::vector<Migration>& steps, bool final);
// For a role that only uses the schema: fleet.schema unless it is usable.
Result<Ok> require_current(detail::Connection& c);

}  // namespace dedupd::fleet::schema
