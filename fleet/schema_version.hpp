// Where the fleet schema stands and how it gets where this build needs it:
// the migrations (migrations.hpp) applied in order inside one transaction
// under an advisory lock, recorded in dedupd.schema_version.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "fleet/connection.hpp"
#include "fleet/fleet.hpp"
#include "fleet/migrations.hpp"

namespace dedupd::fleet::schema {

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
