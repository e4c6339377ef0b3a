// The fleet schema's migrations: entry i takes the schema from version i to
// i + 1 (the first creates it). The SQL lives in migrations.cpp.
#pragma once

#include <string>
#include <vector>

namespace dedupd::fleet::schema {

const std::vector<std::string>& migrations();

}  // namespace dedupd::fleet::schema
