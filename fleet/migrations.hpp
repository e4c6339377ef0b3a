// The fleet schema's migrations: entry i takes the schema from version i to
// i + 1 (the first creates it). The SQL lives in migrations.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dedupd::fleet::schema {

struct Migration {
  std::string sql;
  // Only adds (a table, a nullable column, an index): dedupd that know the
  // schema before it keep reading and writing, so it runs by itself.
  // Otherwise, past version kLastAutomatic, it waits for the operator's
  // `dedupd --fleet-migrate --final` (every host upgraded).
  bool additive = false;
};

// Versions up to this one (0.1.0's) ran by themselves whatever they did:
// before 0.2.0 nothing recorded which dedupd a schema still served.
inline constexpr std::uint32_t kLastAutomatic = 6;

const std::vector<Migration>& migrations();

}  // namespace dedupd::fleet::schema
