// Opening the index's tables (tables.hpp): created in a new environment,
// checked in an existing one, and an older schema upgraded in place
// (upgrade.hpp) before the version says the current one.
#pragma once

#include <functional>
#include <string>

#include "index/env.hpp"
#include "index/status.hpp"
#include "index/tables.hpp"

namespace dedupd::index::schema {

// Creates the tables in a new environment, or checks the version of an
// existing one: another version (or an LMDB environment that is not a dedupd
// index) is an error naming both versions. A read-only environment
// (EnvOptions::read_only) is only checked: nothing is created or upgraded.
// `scope_of_path` (may be empty) gives the shards of an index older than 7
// their CAS (upgrade.hpp).
Result<Dbs> open(lmdb::Env& env, const std::function<std::string(const std::string&)>& scope_of_path = {});

}  // namespace dedupd::index::schema
